package netfault

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"
)

// TestRTTToxic: the rtt toxic adds its round trip to the microsecond
// (Toxiproxy's latency toxic counts whole milliseconds), and two of them on
// a link add up.
func TestRTTToxic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	echo := ln.Addr().String()
	go func() { _ = ServeEchoOn(ctx, ln) }()
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
			d, err := MeasureRTT(ctx, p.Addr(), 50)
			if err != nil || d < tc.min || tc.below > 0 && d >= tc.below {
				t.Errorf("round trip %s (%v), want at least %s (and under %s if set)", d, err, tc.min, tc.below)
			}
		})
	}
}
