package bench

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/internal/fault"
)

// rec is a Faulter of our own that records when each fault began and ended.
type rec struct {
	mu     sync.Mutex
	events []string
	at     []time.Time
	fail   error
}

func recorder(fail error) *rec { return &rec{fail: fail} }

func (r *rec) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

func (r *rec) log(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, s)
	r.at = append(r.at, time.Now())
}

func (r *rec) Inject(_ context.Context, f fleet.Fault) (func(context.Context) error, error) {
	if r.fail != nil {
		return nil, r.fail
	}
	r.log("start " + f.String())
	return func(context.Context) error { r.log("end " + f.String()); return nil }, nil
}

func TestScheduleFaults(t *testing.T) {
	f := fleet.Fault{Kind: fault.Pause, Component: "inst-2", Start: 50 * time.Millisecond, Duration: 100 * time.Millisecond}
	t.Run("on time", func(t *testing.T) {
		r := recorder(nil)
		t0 := time.Now()
		if err := scheduleFaults(context.Background(), r, []fleet.Fault{f}, t0)(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r.events, []string{"start " + f.String(), "end " + f.String()}) {
			t.Fatalf("events %v", r.events)
		}
		if d := r.at[0].Sub(t0); d < f.Start {
			t.Errorf("started after %v, before its start %v", d, f.Start)
		}
		if d := r.at[1].Sub(t0); d < f.Start+f.Duration {
			t.Errorf("ended after %v, before its end %v", d, f.Start+f.Duration)
		}
	})
	t.Run("a cancelled run still ends the fault", func(t *testing.T) {
		r := recorder(nil)
		ctx, cancel := context.WithCancel(context.Background())
		wait := scheduleFaults(ctx, r, []fleet.Fault{{Kind: fault.Kill, Component: "redis-1", Start: 0, Duration: time.Hour}}, time.Now())
		// Cancel once the fault has started.
		for r.count() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
		if err := wait(); err != nil {
			t.Fatal(err)
		}
		if len(r.events) != 2 {
			t.Fatalf("events %v, want start and end", r.events)
		}
	})
	t.Run("an injection error is reported", func(t *testing.T) {
		boom := errors.New("boom")
		if err := scheduleFaults(context.Background(), recorder(boom), []fleet.Fault{f}, time.Now())(); !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestFaultWindows(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s, latency float64, code int, errCode string) Response {
		return Response{Code: code, Error: errCode, Sent: t0.Add(time.Duration(s * float64(time.Second))),
			Latency: time.Duration(latency * float64(time.Second))}
	}
	var rs []Response
	for i := range 9 { // before: 0-5s, all ok
		rs = append(rs, at(float64(i)*0.5, 0.01, 200, ""))
	}
	// Sent before the fault, answered during it: it counts during.
	rs = append(rs, at(4.9, 0.3, 200, ""))
	rs = append(rs, at(5.5, 0, 503, "lock_timeout"), at(9.9, 0, 503, "lock_timeout")) // during: 5-10s
	rs = append(rs, at(10, 0, 200, ""), at(12, 0, 200, ""))                           // after: 10-15s
	cases := []struct {
		name   string
		faults []fleet.Fault
		want   []Window
	}{
		{"a 5 s pause", []fleet.Fault{{Kind: fault.Pause, Component: "inst-2", Start: 5 * time.Second, Duration: 5 * time.Second}}, []Window{
			{Name: "before", Answered: 9, OK: 9, OKPerSec: 1.8},
			{Name: "during", Answered: 3, OK: 1, OKPerSec: 0.2},
			{Name: "after", Answered: 2, OK: 2, OKPerSec: 0.4},
		}},
		{"a strike at once: no rate over 10 ms", []fleet.Fault{{Kind: fault.Pause, Component: "inst-2", Start: 10 * time.Millisecond, Duration: 10 * time.Second}}, []Window{
			{Name: "before", Answered: 0, OK: 0, TooShort: true},
			{Name: "during", Answered: 13, OK: 11, OKPerSec: 1.1},
			{Name: "after", Answered: 1, OK: 1, OKPerSec: 1 / 4.99},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws := faultWindows(rs, t0, c.faults, 15*time.Second)
			if len(ws) != 3 {
				t.Fatalf("windows %+v", ws)
			}
			for i, w := range c.want {
				g := ws[i]
				if g.Name != w.Name || g.Answered != w.Answered || g.OK != w.OK || g.TooShort != w.TooShort ||
					math.Abs(g.OKPerSec-w.OKPerSec) > 1e-9 {
					t.Errorf("window %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
	if g := longestGap(rs); g != 4800*time.Millisecond { // sales answered at 5.2 s, then 10 s
		t.Errorf("longest gap = %s", g)
	}
	ws := faultWindows(rs, t0, cases[0].faults, 15*time.Second)
	if ws[1].Outcomes[OutcomeLockTimeout] != 2 {
		t.Errorf("during outcomes %v", ws[1].Outcomes)
	}
	if faultWindows(rs, t0, nil, time.Second) != nil {
		t.Error("windows without a fault")
	}
}
