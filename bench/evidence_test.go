package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/bench/history"
	"github.com/seckill-lab/seckill/stock"
)

// TestLockTimeoutIsARefusal: a 503 lock_timeout never reached the
// deduction, so the history counts it as a refusal (no effect), not as an
// operation that may or may not have happened.
func TestLockTimeoutIsARefusal(t *testing.T) {
	ops := historyOps([]Response{timeout("t1"), {RequestID: "e1", Code: 503, Error: "backend_unavailable"}}, 1)
	if ops[0].Result != history.Refused {
		t.Errorf("lock_timeout: result %v, want Refused", ops[0].Result)
	}
	if ops[1].Result != history.Unknown {
		t.Errorf("backend_unavailable: result %v, want Unknown", ops[1].Result)
	}
}

// TestReplayedSaleInHistory: nginx retries a keyed purchase whose instance
// died mid-request; the retry replays the order the first try had sold,
// with the stock as it is now, not as that sale left it (lesson 28's kill
// run: "redis-stream-…-201 and …-600 both reported 0 remaining: two sales
// cannot leave the same stock"). The replayed answer's remaining is not
// evidence: the history is linearizable.
func TestReplayedSaleInHistory(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	answer := func(id string, at, took time.Duration, body string) Response {
		return toResponse(&vegeta.Result{Code: 200, Timestamp: t0.Add(at), Latency: took, Body: []byte(body)}, id)
	}
	resps := []Response{
		// a sold first (left 2); its instance died before the answer, and
		// the retry, after b and c, replayed the order with the stock now.
		answer("a", 0, 50*time.Millisecond, `{"order_id":1,"remaining":0,"replayed":true}`),
		answer("b", 10*time.Millisecond, time.Millisecond, `{"order_id":2,"remaining":1}`),
		answer("c", 20*time.Millisecond, time.Millisecond, `{"order_id":3,"remaining":0}`),
	}
	if !resps[0].Replayed || resps[0].Remaining != nil {
		t.Fatalf("replayed answer recorded as %+v; want Replayed and no remaining", resps[0])
	}
	inv, _, err := checkHistory(context.Background(), resps, 1, 3, "")
	if err != nil {
		t.Fatal(err)
	}
	if !inv.Pass {
		t.Fatalf("linearizability with a replayed sale: %s", inv.Detail)
	}
}

// TestUndecidedLinearizability: a check that ran out of time is shown as
// undecided, and counted neither as passed nor as failed.
func TestUndecidedLinearizability(t *testing.T) {
	inv := linearizability(history.Report{Verdict: history.VerdictUnknown, Ops: 40})
	if inv.Pass || !inv.Undecided || inv.Failed() {
		t.Fatalf("undecided check: %+v, want Pass false, Undecided true, not Failed", inv)
	}
	if !strings.Contains(inv.Detail, "undecided") {
		t.Errorf("detail %q does not say undecided", inv.Detail)
	}
	a := Audit{Invariants: []Invariant{{Name: "x", Pass: true, Applicable: true}, inv}}
	if a.Passed() != 1 || a.Decided() != 1 {
		t.Errorf("passed %d of %d decided, want 1 of 1", a.Passed(), a.Decided())
	}
	if inv := linearizability(history.Report{Verdict: history.Linearizable, Ops: 3}); !inv.Pass || inv.Undecided {
		t.Errorf("linearizable: %+v", inv)
	}
}

// section builds the events of one committed purchase under a lock.
func section(inst, purchase string, from int64, seq *uint64) []stock.Event {
	var out []stock.Event
	for i, k := range []stock.EventKind{stock.EventRequested, stock.EventAcquired, stock.EventRead, stock.EventWritten, stock.EventCommitted, stock.EventReleased} {
		*seq++
		out = append(out, stock.Event{Seq: *seq, MonoNS: from + int64(i), Instance: inst, Purchase: purchase, Key: "goods:1", Kind: k, Token: 1})
	}
	return out
}

// TestMutualExclusionComparesSales: the check fails when the critical
// sections seen do not cover the sales (a stream cut early saw only part
// of the run), instead of saying "none overlapping" about what it saw,
// and marks the failure Incomplete: no overlap was seen.
func TestMutualExclusionComparesSales(t *testing.T) {
	var seq uint64
	events := append(section("inst-1", "p1", 100, &seq), section("inst-1", "p2", 200, &seq)...)
	tests := []struct {
		name  string
		sales []string
		gaps  []string
		pass  bool
		want  string
	}{
		{"every sale seen", []string{"p1", "p2"}, nil, true, "2 critical sections"},
		{"a sale not seen", []string{"p1", "p2", "p3"}, nil, false, "1 sales without"},
		{"a section without a sale", []string{"p1"}, nil, false, "1 committed critical sections without"},
		{"gaps covered by the sales", []string{"p1", "p2"}, []string{"inst-2: stream ended"}, true, "inst-2: stream ended"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var run RunResult
			invs, err := lockEvidence(&run, events, evidenceInput{sales: tc.sales, gaps: tc.gaps}, "", "run")
			if err != nil {
				t.Fatal(err)
			}
			mx := invs[0]
			if mx.Name != InvMutualExclusion || mx.Pass != tc.pass || !mx.Applicable || mx.Incomplete == tc.pass {
				t.Fatalf("%+v, want pass %v, incomplete %v (no overlap seen)", mx, tc.pass, !tc.pass)
			}
			if !strings.Contains(mx.Detail, tc.want) {
				t.Errorf("detail %q, want it to contain %q", mx.Detail, tc.want)
			}
		})
	}
}

// eventServer serves /admin/events like an instance: each connection gets
// the next script's events (all of them, or only the kept ones with
// ?replay=true, then the replay marker) and then ends, or stays open
// until the client goes.
type eventServer struct {
	mu      sync.Mutex
	scripts []eventScript
	conns   int
}

type eventScript struct {
	kept, live []stock.Event // kept: what a replay sends
	stayOpen   bool
}

func (s *eventServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	sc := s.scripts[min(s.conns, len(s.scripts)-1)]
	s.conns++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(ev stock.Event) {
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: lock\ndata: %s\n\n", b)
	}
	if r.URL.Query().Get("replay") == "true" {
		for _, ev := range sc.kept {
			send(ev)
		}
		fmt.Fprint(w, stock.ReplayedComment+"\n\n")
	}
	for _, ev := range sc.live {
		send(ev)
	}
	w.(http.Flusher).Flush()
	if sc.stayOpen {
		<-r.Context().Done()
	}
}

// TestEventStreamReconnects: a stream that ends during the run is opened
// again with the replay; the events already seen are not counted twice,
// and what neither the stream nor the replay has is reported as a gap.
func TestEventStreamReconnects(t *testing.T) {
	var seq uint64
	start := stock.MonoNow() + int64(time.Second) // after the collection starts
	p := func(name string, at int64) []stock.Event { return section("inst-1", name, start+at, &seq) }
	p1, p2, p3 := p("p1", 10), p("p2", 20), p("p3", 30)
	old := stock.Event{Seq: 1, MonoNS: start - 1000, Instance: "inst-1", Purchase: "before", Key: "goods:1", Kind: stock.EventCommitted}
	all := func(evs ...[]stock.Event) []stock.Event {
		var out []stock.Event
		for _, e := range evs {
			out = append(out, e...)
		}
		return out
	}
	tests := []struct {
		name     string
		scripts  []eventScript
		sections int
		gap      string
	}{
		{"replay covers the cut", []eventScript{
			{live: p1},
			{kept: all([]stock.Event{old}, p1, p2), live: p3, stayOpen: true},
		}, 3, ""},
		{"replay lost some", []eventScript{
			{live: p1},
			{kept: p3, stayOpen: true},
		}, 2, "missing"},
		{"events dropped live", []eventScript{
			{live: all(p1, p3), stayOpen: true},
		}, 2, "dropped"},
		// Killed and started again: it kept nothing, and numbers its
		// events from 1 again, none of them dropped.
		{"the instance restarted", []eventScript{
			{live: p1},
			{live: section("inst-1", "p4", start+40, new(uint64)), stayOpen: true},
		}, 2, "missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&eventServer{scripts: tc.scripts})
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := collectEvents(ctx, fleet.Fleet{Instances: []string{srv.URL}, AdminToken: "t"}, "goods:1")
			if err != nil {
				t.Fatal(err)
			}
			want := tc.sections * 6
			if tc.name == "events dropped live" {
				want = len(p1) + len(p3)
			}
			for !c.has(want) {
				select {
				case <-ctx.Done():
					t.Fatalf("collected %d events, want %d", c.count(), want)
				case <-time.After(5 * time.Millisecond):
				}
			}
			events, gaps := c.stop()
			if len(events) != want {
				t.Errorf("%d events, want %d (none twice)", len(events), want)
			}
			for _, ev := range events {
				if ev.Purchase == "before" {
					t.Errorf("an event from before the run was collected: %+v", ev)
				}
			}
			joined := strings.Join(gaps, "; ")
			if tc.gap == "" && len(gaps) > 0 || tc.gap != "" && !strings.Contains(joined, tc.gap) {
				t.Errorf("gaps %q, want %q", joined, tc.gap)
			}
			if tc.gap != "dropped" && strings.Contains(joined, "dropped") {
				t.Errorf("gaps %q: no event was dropped", joined)
			}
		})
	}
}

// count is how many events c kept; has reports at least n.
func (c *eventCollector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.events)
}

func (c *eventCollector) has(n int) bool { return c.count() >= n }
