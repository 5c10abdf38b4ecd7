package bench

import (
	"encoding/json"
	"maps"
	"testing"
	"time"
)

// TestObserveFault: the observed fault window is the first and last second
// of the answers' timeline with an error, a lock timeout, a lease lost or a
// stale holder refused; sales, sold out and the per-user limit leave none.
// The answers are shaped as the bench records them (sent time, latency,
// code and the service's error, nginx's 502 text, a transport error).
func TestObserveFault(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	// answer is a response sent at sent seconds after t0, answered lat later.
	answer := func(sent, lat float64, code int, err string) Response {
		return Response{RequestID: "r", Code: code, Error: err,
			Sent: t0.Add(time.Duration(sent * float64(time.Second))), Latency: time.Duration(lat * float64(time.Second))}
	}
	ok := func(sent float64) Response { return answer(sent, 0.2, 200, "") }
	for _, tc := range []struct {
		name      string
		responses []Response
		want      *ObservedFault // Timeline not compared
	}{
		{"no fault", []Response{ok(0), ok(0.5), ok(1.2), answer(1.3, 0.01, 409, "sold_out"), answer(1.4, 0.01, 409, "user_limit")}, nil},
		{"a partition of 2.5 s: 503s, then a stale holder refused",
			[]Response{ok(0), ok(1), ok(2),
				answer(3.1, 0.05, 503, "backend_unavailable"),
				answer(3.2, 1.9, 503, "lock_timeout"),
				answer(4.0, 0.3, 502, "502 Bad Gateway"),
				answer(5.5, 0.2, 409, "stale_lock"),
				ok(6), ok(7), ok(8)},
			&ObservedFault{FromS: 3, ToS: 6, FaultySeconds: 3,
				Faulty: map[string]int{OutcomeError: 2, OutcomeLockTimeout: 1, OutcomeStaleLock: 1}}},
		{"a slow answer counts in the second it came back",
			[]Response{ok(0), answer(0.5, 9.7, 0, "Post \"http://nginx/purchase\": context deadline exceeded"), ok(11)},
			&ObservedFault{FromS: 10, ToS: 11, FaultySeconds: 1, Faulty: map[string]int{OutcomeError: 1}}},
		{"two faulty seconds apart: the span covers both",
			[]Response{answer(1.1, 0.1, 409, "lease_lost"), ok(2), ok(3), answer(4.2, 0.1, 409, "lease_lost")},
			&ObservedFault{FromS: 1, ToS: 5, FaultySeconds: 2, Faulty: map[string]int{OutcomeLeaseLost: 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := observeFault(tc.responses, t0)
			if (got == nil) != (tc.want == nil) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if got == nil {
				return
			}
			if got.FromS != tc.want.FromS || got.ToS != tc.want.ToS || got.FaultySeconds != tc.want.FaultySeconds || !maps.Equal(got.Faulty, tc.want.Faulty) {
				t.Errorf("got from %v to %v, %d seconds, %v; want from %v to %v, %d seconds, %v",
					got.FromS, got.ToS, got.FaultySeconds, got.Faulty, tc.want.FromS, tc.want.ToS, tc.want.FaultySeconds, tc.want.Faulty)
			}
			answered := 0
			for i, s := range got.Timeline {
				if s.At != i {
					t.Errorf("timeline[%d] is second %d", i, s.At)
				}
				answered += s.Answered
			}
			if answered != len(tc.responses) {
				t.Errorf("the timeline counts %d answers of %d", answered, len(tc.responses))
			}
			// The window covers the run's span by answer time.
			f := got.fault()
			if f.Start.Seconds() != got.FromS || (f.Start+f.Duration).Seconds() != got.ToS {
				t.Errorf("as a fault: %v+%v", f.Start, f.Duration)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var back map[string]any
			if err := json.Unmarshal(b, &back); err != nil || back["from_s"] == nil || back["timeline"] == nil {
				t.Errorf("report.json form %s: %v", b, err)
			}
		})
	}
}
