package costmodel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"time"
)

// FsyncMS returns the median time, in ms, of n writes of a 512-byte block
// each followed by an fsync, appended to a new file in dir (removed after):
// what a server that fsyncs a small log record per write pays on dir's
// file system.
func FsyncMS(ctx context.Context, dir string, n int) (float64, error) {
	if n <= 0 {
		n = 1
	}
	f, err := os.CreateTemp(dir, ".seckill-fsync-*")
	if err != nil {
		return 0, fmt.Errorf("fsync probe in %s: %w", dir, err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	block := make([]byte, 512)
	var ds []time.Duration
	for range n {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		t0 := time.Now()
		if _, err := f.Write(block); err != nil {
			return 0, fmt.Errorf("fsync probe: write %s: %w", f.Name(), err)
		}
		if err := f.Sync(); err != nil {
			return 0, fmt.Errorf("fsync probe: fsync %s: %w", f.Name(), err)
		}
		ds = append(ds, time.Since(t0))
	}
	return medianMS(ds), nil
}

// LoopbackRTTMS returns the median time, in ms, of n one-byte round trips
// over a TCP connection on 127.0.0.1: the direct round trip of a stack on
// one machine with no latency added to its links.
func LoopbackRTTMS(ctx context.Context, n int) (float64, error) {
	if n <= 0 {
		n = 1
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("round-trip probe: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // closes ln
	go func() { _ = ServeEchoOn(ctx, ln) }()
	d, err := MeasureRTT(ctx, ln.Addr().String(), n)
	if err != nil {
		return 0, fmt.Errorf("round-trip probe: %w", err)
	}
	return float64(d.Nanoseconds()) / 1e6, nil
}

func medianMS(ds []time.Duration) float64 {
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Nanoseconds()) / 1e6
}

// ServeEcho answers every byte sent to listen with the same byte until ctx
// is done: the far end of the round-trip probe (MeasureRTT), reached once
// directly and once through a proxy with the links' round trip.
func ServeEcho(ctx context.Context, listen string) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("echo on %s: %w", listen, err)
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
			return fmt.Errorf("echo on %s: %w", listen, err)
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
		return 0, errors.New("MeasureRTT needs n >= 1")
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, fmt.Errorf("round-trip probe to %s: %w", addr, err)
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
			return 0, fmt.Errorf("round-trip probe to %s: %w", addr, err)
		}
		if _, err := io.ReadFull(c, b); err != nil {
			return 0, fmt.Errorf("round-trip probe to %s: %w", addr, err)
		}
		ts = append(ts, time.Since(t0))
	}
	slices.Sort(ts)
	return ts[len(ts)/2], nil
}
