package bench

import (
	"testing"
	"time"
)

// TestSalesStopped: the time from a strike to the next sale (or sold-out
// answer), and whether one came at all.
func TestSalesStopped(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64, code int) Response {
		r := Response{Code: code, Sent: t0.Add(time.Duration(s * float64(time.Second))), Latency: 0}
		if code == 409 {
			r.Error = "sold_out"
		}
		return r
	}
	strike := []Strike{NewStrike("kill -9 inst-1", "acquired", 2*time.Second, time.Second)}
	tests := []struct {
		name      string
		responses []Response
		strikes   []Strike
		stopped   time.Duration
		resumed   bool
	}{
		{"no strike", []Response{at(1, 200), at(9, 500)}, nil, 0, true},
		{"resumed", []Response{at(1, 200), at(2.5, 500), at(4.5, 200), at(5, 200)}, strike, 2500 * time.Millisecond, true},
		{"sold out counts", []Response{at(1, 200), at(3, 409)}, strike, time.Second, true},
		{"never resumed", []Response{at(1, 200), at(7, 500), at(12, 500)}, strike, 10 * time.Second, false},
		{"nobody asked after", []Response{at(1, 200)}, strike, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stopped, resumed := salesStopped(tt.responses, t0, tt.strikes)
			if stopped != tt.stopped || resumed != tt.resumed {
				t.Errorf("salesStopped = %v, %v; want %v, %v", stopped, resumed, tt.stopped, tt.resumed)
			}
		})
	}
}
