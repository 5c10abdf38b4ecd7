package netfault

import (
	"context"
	"fmt"
	"github.com/seckill-lab/seckill/bench/costmodel"
	"net"
	"syscall"
	"testing"
	"time"
)

// echoServer starts an echo server for the test and returns its address.
func echoServer(ctx context.Context, t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = costmodel.ServeEchoOn(ctx, ln) }()
	return ln.Addr().String()
}

// TestRTTToxic: the rtt toxic adds its round trip to the microsecond
// (Toxiproxy's latency toxic counts whole milliseconds), and two of them on
// a link add up.
func TestRTTToxic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	echo := echoServer(ctx, t)
	tests := []struct {
		name   string
		halves []int64 // one-way delays in µs, each put on both streams
		min    time.Duration
		// below, when set, is what a round trip must stay under: Go's
		// timers alone would make the zone profile's 0.2 ms one of 2.4
		// ms (a millisecond late each way).
		below time.Duration
	}{
		{"none", nil, 0, 0},
		{"zone", []int64{100}, 200 * time.Microsecond, 1500 * time.Microsecond},
		{"sub-millisecond", []int64{300}, 600 * time.Microsecond, 0},
		{"two toxics add up", []int64{300, 500}, 1600 * time.Microsecond, 0},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start(fmt.Sprintf("rtt-test-%d", i), "127.0.0.1:0", echo)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			for j, us := range tc.halves {
				for _, stream := range []string{"upstream", "downstream"} {
					if err := p.add(fmt.Sprintf("rtt-%d-%s", j, stream), RTTToxic, stream, fmt.Sprintf(`{"delay_us":%d}`, us)); err != nil {
						t.Fatal(err)
					}
				}
			}
			d, err := costmodel.MeasureRTT(ctx, p.Addr(), 50)
			if err != nil || d < tc.min || tc.below > 0 && d >= tc.below {
				t.Errorf("round trip %s (%v), want at least %s (and under %s if set)", d, err, tc.min, tc.below)
			}
		})
	}
}

// TestRTTToxicIdleCPU: a chunk waiting out its delay costs no CPU. The
// toxic used to yield in a loop through the last 1.5 ms of every wait, so
// at the cross-zone profile (1 ms each way) every chunk in flight kept a
// CPU busy: the stack's proxy spent 12.85 ms of CPU per purchase under the
// redis lock at 71 purchases/s, and took the CPU from the servers it
// stands between. Here 16 connections ping-pong through the proxy, once
// with no delay and once through a 2 ms round trip: the CPU per round trip
// may grow by the wake-ups (measured 26-46 and 96 µs), not by the wait (the
// spinning toxic: 400 µs, both CPUs busy).
func TestRTTToxicIdleCPU(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	echo := echoServer(ctx, t)
	const conns, rounds = 16, 150
	perRound := func(name string, oneWayUS int) time.Duration {
		p, err := Start(name, "127.0.0.1:0", echo)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		for _, stream := range []string{"upstream", "downstream"} {
			if err := p.add(name+"-"+stream, RTTToxic, stream, fmt.Sprintf(`{"delay_us":%d}`, oneWayUS)); err != nil {
				t.Fatal(err)
			}
		}
		cpu0, wall0 := processCPU(t), time.Now()
		errs := make(chan error, conns)
		for range conns {
			go func() {
				_, err := costmodel.MeasureRTT(ctx, p.Addr(), rounds)
				errs <- err
			}()
		}
		for range conns {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		cpu, wall := processCPU(t)-cpu0, time.Since(wall0)
		if min := rounds * 2 * time.Duration(oneWayUS) * time.Microsecond; wall < min {
			t.Fatalf("%s: %d round trips took %v, under the %v the toxic adds", name, rounds, wall, min)
		}
		return cpu / (conns * rounds)
	}
	base := perRound("rtt-idle-cpu-0", 0)
	delayed := perRound("rtt-idle-cpu-1000", 1000)
	t.Logf("CPU per round trip: %v without a delay, %v through a 2 ms round trip", base, delayed)
	if delayed > 6*base {
		t.Errorf("a 2 ms round trip through the proxy cost %v of CPU, %.1f× the %v without a delay: the wait costs CPU (want under 6×)", delayed, float64(delayed)/float64(base), base)
	}
}

// processCPU is this process's user and system CPU time so far.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
