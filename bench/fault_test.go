package bench

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseFault(t *testing.T) {
	tests := []struct {
		spec string
		want Fault
		err  string
	}{
		{"pause:inst-2@5s+5s", Fault{FaultPause, "inst-2", 5 * time.Second, 5 * time.Second}, ""},
		{"kill:redis-1@0s+1.5s", Fault{FaultKill, "redis-1", 0, 1500 * time.Millisecond}, ""},
		{"freeze:inst-2@5s+5s", Fault{}, `unknown kind "freeze"; valid: pause, kill`},
		{"pause:inst-2", Fault{}, "KIND:COMPONENT@START+DURATION"},
		{"pause@5s+5s", Fault{}, "KIND:COMPONENT@START+DURATION"},
		{"pause:@5s+5s", Fault{}, "KIND:COMPONENT@START+DURATION"},
		{"pause:inst-2@5s", Fault{}, "KIND:COMPONENT@START+DURATION"},
		{"pause:inst-2@soon+5s", Fault{}, "start"},
		{"pause:inst-2@5s+0s", Fault{}, "duration"},
		{"pause:inst-2@-1s+5s", Fault{}, "start"},
	}
	for _, tt := range tests {
		got, err := ParseFault(tt.spec)
		if tt.err != "" {
			if err == nil || !errors.Is(err, ErrBadFault) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: err = %v, want one mentioning %q", tt.spec, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want || got.String() != tt.spec && tt.spec != "kill:redis-1@0s+1.5s" {
			t.Errorf("%q: %+v, %v (String %q)", tt.spec, got, err, got.String())
		}
	}
}

// rec is a Faulter of our own that records when each fault began and ended.
type rec struct {
	mu     sync.Mutex
	events []string
	at     []time.Time
	fail   error
}

func recorder(fail error) *rec { return &rec{fail: fail} }

func (r *rec) log(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, s)
	r.at = append(r.at, time.Now())
}

func (r *rec) Inject(_ context.Context, f Fault) (func(context.Context) error, error) {
	if r.fail != nil {
		return nil, r.fail
	}
	r.log("start " + f.String())
	return func(context.Context) error { r.log("end " + f.String()); return nil }, nil
}

func TestScheduleFaults(t *testing.T) {
	f := Fault{FaultPause, "inst-2", 50 * time.Millisecond, 100 * time.Millisecond}
	t.Run("on time", func(t *testing.T) {
		r := recorder(nil)
		t0 := time.Now()
		if err := scheduleFaults(context.Background(), r, []Fault{f}, t0)(); err != nil {
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
		wait := scheduleFaults(ctx, r, []Fault{{FaultKill, "redis-1", 0, time.Hour}}, time.Now())
		time.Sleep(20 * time.Millisecond)
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
		if err := scheduleFaults(context.Background(), recorder(boom), []Fault{f}, time.Now())(); !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestFaultWindows(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64, code int, errCode string) Response {
		return Response{Code: code, Error: errCode, Sent: t0.Add(time.Duration(s * float64(time.Second)))}
	}
	var rs []Response
	for i := range 10 { // before: 0-5s, all ok
		rs = append(rs, at(float64(i)*0.5, 200, ""))
	}
	rs = append(rs, at(5.5, 503, "lock_timeout"), at(6, 200, ""), at(9.9, 503, "lock_timeout")) // during: 5-10s
	rs = append(rs, at(10, 200, ""), at(12, 200, ""))                                           // after: 10-15s
	ws := faultWindows(rs, t0, []Fault{{FaultPause, "inst-2", 5 * time.Second, 5 * time.Second}}, 15*time.Second)
	want := []struct {
		name     string
		sent, ok int
		okPerSec float64
	}{{"before", 10, 10, 2}, {"during", 3, 1, 0.2}, {"after", 2, 2, 0.4}}
	if len(ws) != 3 {
		t.Fatalf("windows %+v", ws)
	}
	for i, w := range want {
		if ws[i].Name != w.name || ws[i].Sent != w.sent || ws[i].OK != w.ok || ws[i].OKPerSec != w.okPerSec {
			t.Errorf("window %d = %+v, want %+v", i, ws[i], w)
		}
	}
	if ws[1].Outcomes[OutcomeLockTimeout] != 2 {
		t.Errorf("during outcomes %v", ws[1].Outcomes)
	}
	if faultWindows(rs, t0, nil, time.Second) != nil {
		t.Error("windows without a fault")
	}
}
