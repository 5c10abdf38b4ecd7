package bench

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/internal/fault"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// ok, soldOut, ... build crafted responses.
func ok(id string) Response      { return Response{RequestID: id, Code: 200, Instance: "inst-1"} }
func soldOut(id string) Response { return Response{RequestID: id, Code: 409, Error: "sold_out"} }
func timeout(id string) Response { return Response{RequestID: id, Code: 503, Error: "lock_timeout"} }

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i+1)
	}
	return out
}

// fleetRun crafts a run of nOK successes then nSold sold-outs, and the
// server state of a correct sale of those nOK units.
func fleetRun(stock, nOK, nSold int) ([]Response, ServerState) {
	var rs []Response
	var orders []string
	for i, id := range ids("r", nOK+nSold) {
		if i < nOK {
			rs = append(rs, ok(id))
			orders = append(orders, id)
		} else {
			rs = append(rs, soldOut(id))
		}
	}
	return rs, ServerState{InitialStock: stock, FinalStock: stock - nOK, Orders: nOK, SoldQty: nOK, RequestIDs: orders}
}

func TestEvaluate(t *testing.T) {
	type want struct {
		oversold, lost int
		failed         map[string]int // invariant -> count; every other one must pass
		notApplicable  bool           // sold_out_means_all_sold not applicable
	}
	tests := []struct {
		name  string
		craft func() ([]Response, ServerState, int)
		want  want
	}{
		{"correct sell-out", func() ([]Response, ServerState, int) {
			rs, st := fleetRun(3, 3, 2)
			return rs, st, 1
		}, want{}},
		{"oversold and lost updates (none strategy)", func() ([]Response, ServerState, int) {
			// 5 requests all succeeded on a stock of 3; the stock only dropped by 2.
			rs, st := fleetRun(3, 5, 0)
			st.FinalStock = 1
			return rs, st, 1
		}, want{oversold: 2, lost: 3, failed: map[string]int{InvSoldOutAllSold: 2, InvNoLostUpdate: 3}}},
		{"stock below zero", func() ([]Response, ServerState, int) {
			rs, st := fleetRun(3, 5, 0)
			return rs, st, 1 // final = 3-5 = -2
		}, want{oversold: 2, failed: map[string]int{InvStockNonNegative: 2, InvSoldOutAllSold: 2}}},
		{"2xx without order", func() ([]Response, ServerState, int) {
			rs, st := fleetRun(3, 3, 1)
			st.RequestIDs = st.RequestIDs[:2]
			st.Orders, st.SoldQty = 2, 2
			return rs, st, 1
		}, want{lost: -1, failed: map[string]int{InvOKHasOrder: 1, InvSoldOutAllSold: 1}}},
		{"order nobody asked for", func() ([]Response, ServerState, int) {
			rs, st := fleetRun(4, 3, 0)
			st.RequestIDs = append(st.RequestIDs, "ghost")
			st.Orders, st.SoldQty, st.FinalStock = 4, 4, 0
			return rs, st, 1
		}, want{failed: map[string]int{InvNoPhantomOrder: 1}}}, // 4 of 4 sold: the sell-out check applies and holds
		{"request id sold twice", func() ([]Response, ServerState, int) {
			rs, st := fleetRun(3, 2, 1)
			st.RequestIDs = append(st.RequestIDs, "r1")
			st.Orders, st.SoldQty, st.FinalStock = 3, 3, 0
			return rs, st, 1
		}, want{failed: map[string]int{InvNoDoubleSale: 1}}},
		{"order for a 4xx", func() ([]Response, ServerState, int) {
			rs, st := fleetRun(3, 2, 2)
			st.RequestIDs = append(st.RequestIDs, "r3") // r3 was answered sold_out
			st.Orders, st.SoldQty, st.FinalStock = 3, 3, 0
			return rs, st, 1
		}, want{failed: map[string]int{InvNoOrderFor4xx: 1}}},
		{"sold out with sold < stock", func() ([]Response, ServerState, int) {
			rs, st := fleetRun(5, 3, 2)
			return rs, st, 1
		}, want{failed: map[string]int{InvSoldOutAllSold: 2}}},
		{"requests x qty > stock, refused by fencing: did not sell out", func() ([]Response, ServerState, int) {
			rs := []Response{ok("a"), ok("b"), {RequestID: "c", Code: 409, Error: "stale_lock"}, {RequestID: "d", Code: 409, Error: "stale_lock"}}
			st := ServerState{InitialStock: 3, FinalStock: 1, Orders: 2, SoldQty: 2, RequestIDs: []string{"a", "b"}}
			return rs, st, 1
		}, want{notApplicable: true}},
		{"whole stock sold without a sold_out answer (lost updates)", func() ([]Response, ServerState, int) {
			rs, st := fleetRun(3, 4, 0)
			st.FinalStock = 2
			return rs, st, 1
		}, want{oversold: 1, lost: 3, failed: map[string]int{InvSoldOutAllSold: 1, InvNoLostUpdate: 3}}},
		{"lock timeouts leave stock: indeterminate, not applicable", func() ([]Response, ServerState, int) {
			rs := []Response{ok("a"), timeout("b"), timeout("c"), {RequestID: "d", Code: 0, Error: "connection reset"}}
			st := ServerState{InitialStock: 3, FinalStock: 2, Orders: 1, SoldQty: 1, RequestIDs: []string{"a"}}
			return rs, st, 1
		}, want{notApplicable: true}},
		{"every request failed: a failed run, not 'ok 0'", func() ([]Response, ServerState, int) {
			rs := []Response{timeout("a"), timeout("b"), {RequestID: "c", Code: 503, Error: "backend_unavailable"}}
			st := ServerState{InitialStock: 3, FinalStock: 3}
			return rs, st, 1
		}, want{notApplicable: true, failed: map[string]int{InvNotAllFailed: 3}}},
		{"qty 2 leaves one unit a purchase cannot take", func() ([]Response, ServerState, int) {
			rs := []Response{
				{RequestID: "a", Code: 200}, {RequestID: "b", Code: 200}, soldOut("c"),
			}
			st := ServerState{InitialStock: 5, FinalStock: 1, Orders: 2, SoldQty: 4, RequestIDs: []string{"a", "b"}}
			return rs, st, 2
		}, want{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, st, qty := tt.craft()
			a := Evaluate(rs, st, qty)
			if a.Oversold != tt.want.oversold || a.LostUpdates != tt.want.lost {
				t.Errorf("oversold, lost = %d, %d; want %d, %d", a.Oversold, a.LostUpdates, tt.want.oversold, tt.want.lost)
			}
			if len(a.Invariants) != 8 {
				t.Fatalf("got %d invariants, want 8: %+v", len(a.Invariants), a.Invariants)
			}
			for _, inv := range a.Invariants {
				wantCount, wantFail := tt.want.failed[inv.Name]
				if inv.Pass == wantFail || inv.Count != wantCount {
					t.Errorf("%s: pass=%v count=%d (%s); want pass=%v count=%d", inv.Name, inv.Pass, inv.Count, inv.Detail, !wantFail, wantCount)
				}
				if inv.Name == InvSoldOutAllSold && inv.Applicable == tt.want.notApplicable {
					t.Errorf("%s: applicable=%v, want %v", inv.Name, inv.Applicable, !tt.want.notApplicable)
				}
			}
			if got, want := a.Passed(), 8-len(tt.want.failed); got != want {
				t.Errorf("Passed() = %d, want %d", got, want)
			}
		})
	}
}

func TestOutcomes(t *testing.T) {
	rs := []Response{
		ok("a"), soldOut("b"), timeout("c"),
		{RequestID: "d", Code: 409, Error: "stale_lock"},
		{RequestID: "e", Code: 503, Error: "backend_unavailable"},
		{RequestID: "f", Code: 0, Error: "dial tcp: connection refused"},
		{RequestID: "g", Code: 400, Error: "invalid_request"},
	}
	a := Evaluate(rs, ServerState{InitialStock: 10, FinalStock: 9, Orders: 1, SoldQty: 1, RequestIDs: []string{"a"}}, 1)
	want := map[string]int{OutcomeOK: 1, OutcomeSoldOut: 1, OutcomeLockTimeout: 1, OutcomeStaleLock: 1, OutcomeError: 3}
	for k, v := range want {
		if a.Outcomes[k] != v {
			t.Errorf("outcome %s = %d, want %d (all: %v)", k, a.Outcomes[k], v, a.Outcomes)
		}
	}
	wantKinds := map[string]int{"503 backend_unavailable": 1, "dial tcp: connection refused": 1, "400 invalid_request": 1}
	for k, v := range wantKinds {
		if a.ErrorKinds[k] != v {
			t.Errorf("error kind %q = %d, want %d (all: %v)", k, a.ErrorKinds[k], v, a.ErrorKinds)
		}
	}
}

func TestParseStrategies(t *testing.T) {
	tests := []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"all", len(Strategies()), false},
		{"", len(Strategies()), false},
		{"none,redis", 2, false},
		{" none , none ", 1, false},
		{"nope", 0, true},
		{"all,redis", 0, true},
		{",", 0, true},
		{"correct", len(Strategies()) - 8, false},
		{"flawed", 8, false},
	}
	for _, tt := range tests {
		got, err := ParseStrategies(tt.in)
		if (err != nil) != tt.wantErr || len(got) != tt.want {
			t.Errorf("ParseStrategies(%q) = %v, %v; want %d names, err %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	for _, group := range []string{"correct", "flawed"} {
		names, _ := ParseStrategies(group)
		for _, n := range names {
			info, _ := catalog.Lookup(n)
			if info.Flawed != (group == "flawed") {
				t.Errorf("group %s holds %s (flawed %v)", group, n, info.Flawed)
			}
		}
	}
	if len(Strategies()) != 20 {
		t.Errorf("got %d strategies, want 20: %v", len(Strategies()), Strategies())
	}
}

func TestExpectedCorrect(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	type setting struct {
		instances int
		c         stock.Config
	}
	tests := []struct {
		s    string
		st   setting
		want bool
	}{
		{"none", setting{1, stock.Config{}}, false},
		{"mutex", setting{1, stock.Config{}}, true},
		{"mutex", setting{3, stock.Config{}}, false},
		{"mutex-tx", setting{1, stock.Config{}}, false},
		{"redis-ttl", setting{3, stock.Config{WorkDelay: ms(10), LockTTL: ms(100)}}, true},
		{"redis-ttl", setting{3, stock.Config{WorkDelay: ms(100), LockTTL: ms(10)}}, false},
		{"redis-spin", setting{3, stock.Config{WorkDelay: ms(100), LockTTL: ms(10)}}, true},
		{"redis", setting{3, stock.Config{WorkDelay: ms(100), LockTTL: ms(10)}}, true},
		{"redis", setting{3, stock.Config{WorkDelay: ms(100), LockTTL: ms(10), NoWatchdog: true}}, false},
		{"redis", setting{3, stock.Config{WorkDelay: ms(100), LockTTL: ms(10), NoWatchdog: true, Fencing: true}}, true},
		{"redis", setting{3, stock.Config{WorkDelay: ms(10), LockTTL: ms(100), NoWatchdog: true}}, true},
		{"redlock", setting{3, stock.Config{WorkDelay: ms(100), LockTTL: ms(10), NoWatchdog: true, Fencing: true}}, false},
		{"mysql-unique", setting{3, stock.Config{WorkDelay: ms(100), LockTTL: ms(10), NoWatchdog: true}}, false},
		{"sql-atomic", setting{3, stock.Config{}}, true},
		{"mutex-prototype", setting{1, stock.Config{}}, false},
		{"redis-owner", setting{3, stock.Config{LockTTL: ms(100)}}, true},
		{"redis-owner", setting{3, stock.Config{WorkDelay: ms(20), LockTTL: ms(100), ReleasePause: ms(90)}}, false}, // work + pause >= TTL
		{"redis", setting{3, stock.Config{WorkDelay: ms(20), LockTTL: ms(100), ReleasePause: ms(90)}}, true},        // no pause in its release
		{"zookeeper-herd", setting{3, stock.Config{}}, true},
		{"bogus", setting{3, stock.Config{}}, false},
	}
	for _, tt := range tests {
		if got := ExpectedCorrect(tt.s, tt.st.instances, tt.st.c); got != tt.want {
			t.Errorf("ExpectedCorrect(%s, %+v) = %v, want %v", tt.s, tt.st, got, tt.want)
		}
	}
}

func TestOptionsValidation(t *testing.T) {
	flt := fleet.Fault{Kind: fault.Pause, Component: "inst-2", Start: time.Second, Duration: time.Second}
	tests := []struct {
		name string
		mod  func(*Options)
		ok   bool
	}{
		{"zero values take the defaults", func(*Options) {}, true},
		{"negative stock", func(o *Options) { o.Stock = -1 }, false},
		{"negative requests", func(o *Options) { o.Requests = -1 }, false},
		{"too much concurrency", func(o *Options) { o.Concurrency = 10_001 }, false},
		{"negative rate", func(o *Options) { o.Rate = -1 }, false},
		{"negative qty", func(o *Options) { o.Qty = -1 }, false},
		{"unknown strategy", func(o *Options) { o.Strategies = []string{"nope"} }, false},
		{"negative work delay", func(o *Options) { o.Config.WorkDelay = -1 }, false},
		{"no watchdog on all strategies", func(o *Options) { o.Config.NoWatchdog = true }, false},
		{"no watchdog on a strategy without one", func(o *Options) { o.Config.NoWatchdog = true; o.Strategies = []string{"redis", "etcd"} }, false},
		{"release pause on redis-owner", func(o *Options) { o.Config.ReleasePause = time.Second; o.Strategies = []string{"redis-owner"} }, true},
		{"release pause on a one-step release", func(o *Options) { o.Config.ReleasePause = time.Second; o.Strategies = []string{"redis-owner", "redis"} }, false},
		{"negative release pause", func(o *Options) { o.Config.ReleasePause = -1; o.Strategies = []string{"redis-owner"} }, false},
		{"fencing on a lock without tokens", func(o *Options) { o.Config.Fencing = true; o.Strategies = []string{catalog.Redis, catalog.Redlock} }, false},
		{"fencing on a lock with tokens", func(o *Options) { o.Config.Fencing = true; o.Strategies = []string{catalog.Redis} }, true},
		{"lock TTL below the service's minimum", func(o *Options) { o.Config.LockTTL = stock.MinLockTTL - 1 }, false},
		{"work delay above the service's maximum", func(o *Options) { o.Config.WorkDelay = stock.MaxWorkDelay + 1 }, false},
		{"lock wait above the service's maximum", func(o *Options) { o.Config.LockWait = stock.MaxLockWait + 1 }, false},
		{"flt without a faulter", func(o *Options) { o.Rate, o.Faults = 100, []fleet.Fault{flt} }, false},
		{"flt without a rate", func(o *Options) { o.Faults, o.Faulter = []fleet.Fault{flt}, recorder(nil) }, false},
		{"flt past the run", func(o *Options) {
			o.Rate, o.Requests, o.Faults, o.Faulter = 100, 100, []fleet.Fault{flt}, recorder(nil)
		}, false},
		{"batch on every strategy: applied where it can be", func(o *Options) { o.Config.Batch = 16 }, true},
		{"batch at its maximum", func(o *Options) { o.Config.Batch = MaxBatch }, true},
		{"batch too large", func(o *Options) { o.Config.Batch = MaxBatch + 1 }, false},
		{"negative batch", func(o *Options) { o.Config.Batch = -1 }, false},
		{"flt inside the run", func(o *Options) {
			o.Rate, o.Requests, o.Faults, o.Faulter = 100, 300, []fleet.Fault{flt}, recorder(nil)
		}, true},
	}
	for _, tt := range tests {
		var o Options
		tt.mod(&o)
		got, err := o.withDefaults()
		if (err == nil) != tt.ok {
			t.Errorf("%s: err = %v, want ok=%v", tt.name, err, tt.ok)
		}
		if err != nil && (!errors.Is(err, ErrInvalidOptions) || strings.Contains(err.Error(), "--")) {
			t.Errorf("%s: err %q must wrap ErrInvalidOptions and name the option, not a CLI flag", tt.name, err)
		}
		if err == nil && tt.name == "zero values take the defaults" && (got.Stock != DefaultStock || got.Requests != DefaultRequests ||
			got.Concurrency != DefaultConcurrency || got.Repeat != 1 || got.Qty != DefaultQty || got.Seed == 0 ||
			got.GoodsID != DefaultGoodsID || len(got.Strategies) != len(Strategies())) {
			t.Errorf("%s: defaults not filled: %+v", tt.name, got)
		}
	}
}
