package bench

import (
	"context"
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// BenchmarkCalibrate is the generator's ceiling as a benchmark: one op is
// one calibration of 2000 purchases by 50 workers (the bench's defaults);
// the req/s metric is the ceiling the report would print.
func BenchmarkCalibrate(b *testing.B) {
	benchmarkCalibrate(b, nil)
}

// BenchmarkCalibrateFasthttp is BenchmarkCalibrate with the same workers
// sending through fasthttp's HostClient instead of the lean path
// (transport.go), against the same null server: whether the hand-written
// HTTP/1.1 client earns its keep (scripts/client-bench.sh alternates the
// two and writes the ratio into docs/performance.md).
func BenchmarkCalibrateFasthttp(b *testing.B) {
	benchmarkCalibrate(b, fasthttpSenders)
}

// benchmarkCalibrate runs calibrations of the bench's defaults, through
// via's senders when via is set, and reports their mean ceiling as req/s
// and this process's CPU time (generator and null server, user and
// system) per request as cpu-us/req: on a shared machine the CPU a request
// takes moves less than the rate. Every answer must be the null server's
// 200: an error is quick to count but is no request served.
func benchmarkCalibrate(b *testing.B, via func(addr string) func() sender) {
	var rps float64
	requests := 0
	cpu0 := processCPU(b)
	for b.Loop() {
		c, err := calibrateVia(context.Background(), DefaultCalibrateRequests, DefaultConcurrency, 0, via)
		if err != nil {
			b.Fatal(err)
		}
		if c.OK != c.Requests {
			b.Fatalf("%d of %d answers were the null server's 200", c.OK, c.Requests)
		}
		rps += c.CeilingRPS
		requests += c.Requests
	}
	b.ReportMetric(rps/float64(b.N), "req/s")
	b.ReportMetric(float64((processCPU(b)-cpu0)/time.Microsecond)/float64(requests), "cpu-us/req")
}

// processCPU is the user and system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestCalibrateVia: through the lean path and through fasthttp's senders
// alike, a calibration gets exactly its count of the null server's 200s,
// so the benchmarks above compare requests served.
func TestCalibrateVia(t *testing.T) {
	for _, tc := range []struct {
		name string
		via  func(addr string) func() sender
	}{
		{"lean", nil},
		{"fasthttp", fasthttpSenders},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, err := calibrateVia(ctx, 300, 4, 0, tc.via)
			if err != nil {
				t.Fatal(err)
			}
			if c.Requests != 300 || c.OK != 300 {
				t.Errorf("%d requests, %d ok; want 300 of each", c.Requests, c.OK)
			}
		})
	}
}

// fasthttpSenders are senders through one fasthttp.HostClient to addr,
// set up as its documentation advises for speed (no header name or path
// normalising); each worker's sender reuses its own request and response,
// and only the Idempotency-Key and the body change from one purchase to
// the next.
func fasthttpSenders(addr string) func() sender {
	hc := &fasthttp.HostClient{Addr: addr, NoDefaultUserAgentHeader: true,
		DisableHeaderNamesNormalizing: true, DisablePathNormalizing: true}
	return func() sender {
		req, resp := &fasthttp.Request{}, &fasthttp.Response{}
		req.SetRequestURI("http://" + addr + "/api/v1/purchase")
		req.Header.SetMethod(http.MethodPost)
		req.Header.SetUserAgent("seckill-bench")
		req.Header.SetContentType("application/json")
		names := interner{}
		return func(deadline time.Time, id string, reqBody []byte, maxBody int, body *[]byte) (leanResponse, error) {
			req.Header.Set("Idempotency-Key", id)
			req.SetBodyRaw(reqBody)
			var err error
			if deadline.IsZero() {
				err = hc.Do(req, resp)
			} else {
				err = hc.DoDeadline(req, resp, deadline)
			}
			if err != nil {
				return leanResponse{}, err
			}
			r := leanResponse{code: resp.StatusCode(), instance: names.get(resp.Header.Peek("X-Instance")), close: resp.ConnectionClose()}
			if r.code < 200 || r.code >= 400 {
				r.status = strconv.Itoa(r.code) + " " + string(resp.Header.StatusMessage())
			}
			got := resp.Body()
			*body = append((*body)[:0], got[:min(len(got), maxBody)]...)
			r.bytesIn = len(*body)
			return r, nil
		}
	}
}
