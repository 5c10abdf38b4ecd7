package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"
)

// Calibration is the load generator's ceiling: the throughput the same
// attacker settings reach against an in-process handler that does nothing.
type Calibration struct {
	Requests     int     `json:"requests"`
	Concurrency  int     `json:"concurrency"`
	OK           int     `json:"ok"`
	CeilingRPS   float64 `json:"ceiling_rps"`
	DurationSecs float64 `json:"duration_s"`
	P50MS        float64 `json:"p50_ms"`
	P99MS        float64 `json:"p99_ms"`
}

// Calibrate fires requests purchases (closed model, concurrency workers, or
// rate per second when rate > 0) at a null handler on 127.0.0.1 that
// answers like a successful purchase, and reports the generator's ceiling.
func Calibrate(ctx context.Context, requests, concurrency, rate int) (Calibration, error) {
	if requests <= 0 || concurrency <= 0 || rate < 0 {
		return Calibration{}, fmt.Errorf("%w: calibrate needs requests > 0, concurrency > 0 and rate >= 0", ErrInvalidOptions)
	}
	reply := []byte(`{"order_id":1,"goods_id":1,"qty":1,"remaining":0,"instance":"null","strategy":"null","request_id":"x","fence":0}`)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Instance", "null")
		_, _ = w.Write(reply)
	}))
	srv.Start() // httptest listens on 127.0.0.1
	defer srv.Close()

	ok := 0
	res, err := attack(ctx, attackSpec{
		Name:        "calibrate",
		Requests:    requests,
		Concurrency: concurrency,
		Rate:        rate,
		Timeout:     DefaultRequestTimeout,
		Targeter:    purchaseTargeter(srv.URL, DefaultGoodsID, 1, requests, 1, "calibrate"),
		OnResult: func(r *vegetaResult, _ string) {
			if r.Code == http.StatusOK {
				ok++
			}
		},
	})
	if err != nil {
		return Calibration{}, fmt.Errorf("calibrate: %w", err)
	}
	c := Calibration{
		Requests:     res.Results,
		Concurrency:  concurrency,
		OK:           ok,
		DurationSecs: res.Wall.Seconds(),
		P50MS:        ms(res.Metrics.Latencies.P50),
		P99MS:        ms(res.Metrics.Latencies.P99),
	}
	if res.Wall > 0 {
		c.CeilingRPS = float64(res.Results) / res.Wall.Seconds()
	}
	return c, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
