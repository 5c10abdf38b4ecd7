package democli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// The tests run against the stack of SECKILL_STACK_DIR (source its
// env.sh). They use goods ids of their own and put the instances back on
// catalog.None.

// testFleet returns the fleet of the test stack, its strategy restored
// at cleanup.
func testFleet(t *testing.T) Fleet {
	t.Helper()
	f, err := FromStack(testenv.Get(t, testenv.StackDir))
	if err != nil {
		testenv.Unavailable(t, "the test stack", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := f.SetStrategy(ctx, stock.Config{Name: catalog.None}); err != nil {
			t.Errorf("restore the strategy: %v", err)
		}
	})
	return f
}

// unreachable is an address in this project's test port range where
// nothing listens.
const unreachable = "http://127.0.0.1:18999"

func TestBuyAndReset(t *testing.T) {
	f := testFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const goods = 71
	if _, err := f.SetStrategy(ctx, stock.Config{Name: catalog.SQLAtomic}); err != nil {
		t.Fatal(err)
	}
	a, _, err := f.Reset(ctx, goods, 2)
	if err != nil {
		t.Fatal(err)
	}
	if a.GoodsID != goods || a.Stock != 2 || a.InitialStock != 2 || a.Orders != 0 {
		t.Fatalf("audit after reset: %+v", a)
	}
	key := fmt.Sprintf("buy-test-%d", time.Now().UnixNano())
	tests := []struct {
		name      string
		o         BuyOptions
		remaining int64  // when accepted
		err       error  // nil: accepted
		code      string // of a refusal
		replayed  bool
	}{
		{"first", BuyOptions{GoodsID: goods, Qty: 1, User: "u1"}, 1, nil, "", false},
		{"keyed", BuyOptions{GoodsID: goods, Qty: 1, User: "u2", Key: key}, 0, nil, "", false},
		{"same key again replays", BuyOptions{GoodsID: goods, Qty: 1, User: "u2", Key: key}, 0, nil, "", true},
		{"sold out", BuyOptions{GoodsID: goods, Qty: 1, User: "u3"}, 0, ErrRefused, "sold_out", false},
		{"unknown goods", BuyOptions{GoodsID: 987654321, Qty: 1, User: "u3"}, 0, ErrRefused, "goods_not_found", false},
		{"qty 0", BuyOptions{GoodsID: goods, Qty: 0, User: "u3"}, 0, ErrInvalid, "", false},
		{"goods 0", BuyOptions{GoodsID: 0, Qty: 1, User: "u3"}, 0, ErrInvalid, "", false},
		{"no user", BuyOptions{GoodsID: goods, Qty: 1, User: " "}, 0, ErrInvalid, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := f.Buy(ctx, tt.o)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			var re *RefusedError
			if errors.As(err, &re) && (re.Code != tt.code || re.Instance == "" || !strings.Contains(re.Error(), tt.code)) {
				t.Errorf("refusal %+v, want code %s from an instance", re, tt.code)
			}
			if err != nil {
				return
			}
			if r.Remaining != tt.remaining || r.Replayed != tt.replayed || r.Strategy != catalog.SQLAtomic || r.Instance == "" || r.OrderID == 0 {
				t.Errorf("receipt %+v, want remaining %d, replayed %v", r, tt.remaining, tt.replayed)
			}
			var b bytes.Buffer
			if err := WriteReceipt(&b, r); err != nil || !strings.Contains(b.String(), fmt.Sprintf("order %d:", r.OrderID)) {
				t.Errorf("WriteReceipt: %v %q", err, b.String())
			}
		})
	}
	// Bad resets change nothing.
	for _, bad := range []struct {
		goods int64
		stock int
	}{{0, 5}, {goods, -1}} {
		if _, _, err := f.Reset(ctx, bad.goods, bad.stock); !errors.Is(err, ErrInvalid) {
			t.Errorf("Reset(%d, %d): err = %v, want ErrInvalid", bad.goods, bad.stock, err)
		}
	}
	a, _, err = f.Reset(ctx, goods, 5)
	if err != nil || a.Stock != 5 || a.Orders != 0 || a.SoldQty != 0 {
		t.Errorf("second reset: %+v, %v", a, err)
	}
	var b bytes.Buffer
	if err := WriteAudit(&b, a); err != nil || !strings.Contains(b.String(), "stock 5 (initial 5), orders 0") {
		t.Errorf("WriteAudit: %v %q", err, b.String())
	}
}

func TestSetStrategy(t *testing.T) {
	f := testFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fenced := stock.Config{Name: catalog.Redis}
	fenced.Fencing, fenced.LockTTL, fenced.WorkDelay = true, 2*time.Second, time.Millisecond
	noWatchdog := stock.Config{Name: catalog.Redlock}
	noWatchdog.NoWatchdog, noWatchdog.NoLocalQueue = true, true
	badFencing := stock.Config{Name: catalog.Mutex}
	badFencing.Fencing = true
	badTTL := stock.Config{Name: catalog.Redis}
	badTTL.LockTTL = stock.MinLockTTL - 1 // 0 is the default
	tests := []struct {
		name string
		cfg  stock.Config
		err  error
	}{
		{"fencing and knobs", fenced, nil},
		{"no watchdog, no local queue", noWatchdog, nil},
		{"fencing on a lock without tokens", badFencing, ErrInvalid},
		{"lock TTL 0", badTTL, ErrInvalid},
		{"unknown name", stock.Config{Name: "no-such-strategy"}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, err := f.Strategies(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.SetStrategy(ctx, tt.cfg)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			after, err2 := f.Strategies(ctx)
			if err2 != nil {
				t.Fatal(err2)
			}
			if len(after) != len(f.Instances) {
				t.Fatalf("%d settings for %d instances", len(after), len(f.Instances))
			}
			for i, s := range after {
				want := tt.cfg
				if err != nil {
					want = before[i].Config // bad input changes nothing
				}
				if !s.Config.Equal(want) || s.Instance != f.Names[i] {
					t.Errorf("%s: %+v, want %+v", s.Instance, s.Config, want)
				}
			}
			if err == nil && (len(got) != len(f.Instances) || !strings.HasPrefix(got[0].String(), f.Names[0]+"  "+tt.cfg.Name)) {
				t.Errorf("SetStrategy returned %v", got)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestEvents(t *testing.T) {
	f := testFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const goods, other = 72, 73
	if _, err := f.SetStrategy(ctx, stock.Config{Name: catalog.Redis}); err != nil {
		t.Fatal(err)
	}
	for _, g := range []int64{goods, other} {
		if _, _, err := f.Reset(ctx, g, 10); err != nil {
			t.Fatal(err)
		}
	}
	buy := func(g int64, key string) {
		t.Helper()
		if _, err := f.Buy(ctx, BuyOptions{GoodsID: g, Qty: 1, User: "ev", Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	stamp := time.Now().UnixNano()
	past, pastOther := fmt.Sprintf("ev-past-%d", stamp), fmt.Sprintf("ev-other-%d", stamp)
	buy(goods, past)
	buy(other, pastOther)

	// The recorded events, filtered by goods. The answer may reach the
	// client before the lock's release is recorded: await the release.
	var b bytes.Buffer
	for {
		b.Reset()
		if err := f.Events(ctx, &b, EventsOptions{GoodsID: goods}); err != nil {
			t.Fatal(err)
		}
		if released := regexp.MustCompile(regexp.QuoteMeta(past) + ` +` + string(stock.EventReleased)); released.MatchString(b.String()) || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	var kinds []string
	for _, l := range lines {
		if strings.Contains(l, past) {
			kinds = append(kinds, strings.Fields(l)[3])
		}
		if strings.Contains(l, pastOther) {
			t.Errorf("--goods %d shows goods %d: %s", goods, other, l)
		}
	}
	want := []string{string(stock.EventRequested), string(stock.EventAcquired), string(stock.EventRead), string(stock.EventWritten),
		string(stock.EventCommitted), string(stock.EventReleased)}
	if strings.Join(kinds, " ") != strings.Join(want, " ") {
		t.Errorf("events of %s: %v, want %v\n%s", past, kinds, want, b.String())
	}
	if !strings.Contains(b.String(), "token=") || !strings.Contains(b.String(), "value=") {
		t.Errorf("no token or value in:\n%s", b.String())
	}
	// --last: the most recent events only, the newest last.
	var lb bytes.Buffer
	if err := f.Events(ctx, &lb, EventsOptions{GoodsID: goods, Last: 2}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(strings.TrimSpace(lb.String()), "\n"); len(got) != 2 || got[1] != lines[len(lines)-1] {
		t.Errorf("--last 2: %q, want the last 2 of the %d lines", got, len(lines))
	}
	if err := f.Events(ctx, &lb, EventsOptions{Last: -1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("--last -1: %v, want ErrInvalid", err)
	}

	// Following: a purchase made after the start shows up; cancelling ends
	// it without an error.
	fctx, fcancel := context.WithCancel(ctx)
	var live syncBuffer
	done := make(chan error, 1)
	go func() { done <- f.Events(fctx, &live, EventsOptions{Follow: true}) }()
	key := fmt.Sprintf("ev-live-%d", stamp)
	for !strings.Contains(live.String(), past) { // the replay is printed first
		select {
		case err := <-done:
			t.Fatalf("follow ended: %v", err)
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	buy(goods, key)
	for !strings.Contains(live.String(), key+" ") || !strings.Contains(live.String(), string(stock.EventReleased)) {
		select {
		case err := <-done:
			t.Fatalf("follow ended: %v", err)
		case <-ctx.Done():
			t.Fatalf("the live purchase never showed:\n%s", live.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	fcancel()
	if err := <-done; err != nil {
		t.Errorf("follow after cancel: %v", err)
	}
}

// A server that is down is a readable error, not a hang.
func TestUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := Fleet{Target: unreachable, Instances: []string{unreachable}, Names: []string{"inst-1"}, Token: "x"}
	tests := []struct {
		name string
		do   func() error
	}{
		{"buy", func() error { _, err := f.Buy(ctx, BuyOptions{GoodsID: 1, Qty: 1, User: "u"}); return err }},
		{"strategies", func() error { _, err := f.Strategies(ctx); return err }},
		{"set strategy", func() error { _, err := f.SetStrategy(ctx, stock.Config{Name: catalog.None}); return err }},
		{"reset", func() error { _, _, err := f.Reset(ctx, 1, 1); return err }},
		{"events", func() error { return f.Events(ctx, &bytes.Buffer{}, EventsOptions{}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "127.0.0.1:18999") {
				t.Errorf("err = %v, want ErrUnreachable naming the address", err)
			}
		})
	}
}

func TestFormatEvent(t *testing.T) {
	v := int64(7)
	wall := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.Local)
	tests := []struct {
		ev   stock.Event
		want string
	}{
		{stock.Event{Wall: wall, Instance: "inst-1", Purchase: "p1", Kind: stock.EventRequested}, "03:04:05.000006  inst-1   p1"},
		{stock.Event{Wall: wall, Instance: "inst-2", Purchase: "p2", Kind: stock.EventAcquired, Token: 9, WaitedNS: 1500}, "acquired    token=9 waited=2µs"},
		{stock.Event{Wall: wall, Instance: "inst-2", Purchase: "p2", Kind: stock.EventWritten, Value: &v}, "written     value=7"},
		{stock.Event{Wall: wall, Instance: "inst-3", Purchase: "p3", Kind: stock.EventRolledBack, Detail: "stale"}, "detail=stale"},
	}
	for _, tt := range tests {
		if got := FormatEvent(tt.ev); !strings.Contains(got, tt.want) || strings.HasSuffix(got, " ") {
			t.Errorf("FormatEvent(%+v) = %q, want it to contain %q", tt.ev, got, tt.want)
		}
	}
}
