package netfault

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"time"
)

// ServeEcho answers every byte sent to listen with the same byte until ctx
// is done: the far end of the round-trip probe (MeasureRTT), reached once
// directly and once through a proxy with the links' round trip.
func ServeEcho(ctx context.Context, listen string) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("netfault: echo on %s: %w", listen, err)
	}
	return ServeEchoOn(ctx, ln)
}

// ServeEchoOn is ServeEcho on a listener; it closes ln when ctx is done.
func ServeEchoOn(ctx context.Context, ln net.Listener) error {
	listen := ln.Addr().String()
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("netfault: echo on %s: %w", listen, err)
		}
		go func() {
			defer c.Close()
			_, _ = io.Copy(c, c)
		}()
	}
}

// MeasureRTT sends n one-byte messages to the echo server at addr, one at
// a time, and returns the median time until each came back.
func MeasureRTT(ctx context.Context, addr string, n int) (time.Duration, error) {
	if n < 1 {
		return 0, errors.New("netfault: MeasureRTT needs n >= 1")
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, fmt.Errorf("netfault: round-trip probe to %s: %w", addr, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	ts := make([]time.Duration, 0, n)
	b := []byte{0}
	for range n {
		t0 := time.Now()
		if _, err := c.Write(b); err != nil {
			return 0, fmt.Errorf("netfault: round-trip probe to %s: %w", addr, err)
		}
		if _, err := io.ReadFull(c, b); err != nil {
			return 0, fmt.Errorf("netfault: round-trip probe to %s: %w", addr, err)
		}
		ts = append(ts, time.Since(t0))
	}
	slices.Sort(ts)
	return ts[len(ts)/2], nil
}
