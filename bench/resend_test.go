package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestAttackResend: with Resend, a purchase answered 502 or 503
// backend_unavailable is sent again with the same key until a definite
// answer (or the limit: then it stays unanswered); a 4xx is never resent;
// without Resend nothing is.
func TestAttackResend(t *testing.T) {
	var mu sync.Mutex
	tries := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		mu.Lock()
		tries[key]++
		n := tries[key]
		mu.Unlock()
		switch {
		case key[len(key)-1] == '1': // request 1: always a gateway error
			w.WriteHeader(http.StatusBadGateway)
		case key[len(key)-1] == '2': // request 2: sold out, definite
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"error":"sold_out"}`))
		case n < 3: // the others: two indeterminate answers, then a sale
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"backend_unavailable"}`))
		default:
			_, _ = w.Write([]byte(`{"remaining":1}`))
		}
	}))
	defer srv.Close()
	tests := []struct {
		name          string
		resend        int
		resent        int
		ok, uncertain int
	}{
		{"off", 0, 0, 0, 2},
		{"on", 4, 4 + 2, 1, 1}, // request 1 four times, request 3 twice
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var resps []Response
			res, err := attack(context.Background(), attackSpec{
				Name: tt.name, Requests: 3, Concurrency: 3, Timeout: 5 * time.Second, Resend: tt.resend,
				Purchases: purchases{Target: srv.URL, Goods: 1, Qty: 1, Seed: int64(i + 1), Run: tt.name},
				OnResult:  func(r *vegetaResult, id string) { resps = append(resps, toResponse(r, id)) },
			})
			if err != nil {
				t.Fatal(err)
			}
			ok := 0
			for _, r := range resps {
				if r.Outcome() == OutcomeOK {
					ok++
				}
			}
			if res.Resent != tt.resent || ok != tt.ok || unanswered(resps) != tt.uncertain {
				t.Errorf("resent %d, ok %d, unanswered %d; want %d, %d, %d", res.Resent, ok, unanswered(resps), tt.resent, tt.ok, tt.uncertain)
			}
		})
	}
}

func TestOrderAnswered(t *testing.T) {
	ok := func(id string) Response { return Response{RequestID: id, Code: 200} }
	tests := []struct {
		name      string
		responses []Response
		ids       []string
		missing   int
	}{
		{"all answered", []Response{ok("a"), ok("b")}, []string{"a", "b"}, 0},
		{"an order of a 502", []Response{ok("a"), {RequestID: "b", Code: 502}}, []string{"a", "b"}, 1},
		{"no orders", []Response{{RequestID: "b", Code: 503}}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := orderAnswered(tt.responses, tt.ids)
			if inv.Count != tt.missing || inv.Pass != (tt.missing == 0) {
				t.Errorf("%+v; want %d missing", inv, tt.missing)
			}
		})
	}
}

func TestSetSalesGaps(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64, code int) Response {
		return Response{Code: code, Sent: t0.Add(time.Duration(s * float64(time.Second)))}
	}
	steady := []Response{at(1, 200), at(2, 200), at(3, 200), at(4, 200), at(5, 200), at(6, 200)}
	tests := []struct {
		name      string
		responses []Response
		start, d  time.Duration
		gap       time.Duration
		open      bool
	}{
		{"sales went on", steady, 2500 * time.Millisecond, time.Second, time.Second, false},
		{"stopped during", []Response{at(1, 200), at(2, 200), at(2.5, 503), at(7, 200), at(8, 200)}, 3 * time.Second, 2 * time.Second, 4 * time.Second, false},
		{"stopped after the heal", []Response{at(1, 200), at(2, 200), at(9, 200)}, 3 * time.Second, time.Second, 6 * time.Second, false},
		{"stopped just after the heal", []Response{at(1, 200), at(3.5, 200), at(4.5, 200), at(9, 200)}, 3 * time.Second, time.Second, 4500 * time.Millisecond, false},
		{"a gap long after the heal is not its", []Response{at(1, 200), at(3.5, 200), at(4, 200), at(9.5, 200), at(20, 200)}, 3 * time.Second, time.Second, 5500 * time.Millisecond, false},
		{"never again", []Response{at(1, 200), at(4, 503), at(10, 503)}, 3 * time.Second, time.Second, 7 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss := []Strike{NewStrike("x", "", tt.start, tt.d)}
			setSalesGaps(ss, tt.responses, t0)
			if got := time.Duration(ss[0].SalesGapS * float64(time.Second)); got.Round(time.Millisecond) != tt.gap || ss[0].GapOpen != tt.open {
				t.Errorf("gap %v open %v; want %v %v", got, ss[0].GapOpen, tt.gap, tt.open)
			}
		})
	}
}
