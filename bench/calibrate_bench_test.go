package bench

import (
	"context"
	"testing"
)

// BenchmarkCalibrate is the generator's ceiling as a benchmark: one op is
// one calibration of 2000 purchases by 50 workers (the bench's defaults);
// the req/s metric is the ceiling the report would print.
func BenchmarkCalibrate(b *testing.B) {
	var rps float64
	for b.Loop() {
		c, err := Calibrate(context.Background(), DefaultCalibrateRequests, DefaultConcurrency, 0)
		if err != nil {
			b.Fatal(err)
		}
		rps += c.CeilingRPS
	}
	b.ReportMetric(rps/float64(b.N), "req/s")
}
