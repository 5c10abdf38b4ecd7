package cost

import (
	"context"
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
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		return 0, fmt.Errorf("round-trip probe: %w", err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	b := []byte{1}
	var ds []time.Duration
	for range n {
		t0 := time.Now()
		if _, err := c.Write(b); err != nil {
			return 0, fmt.Errorf("round-trip probe: %w", err)
		}
		if _, err := io.ReadFull(c, b); err != nil {
			return 0, fmt.Errorf("round-trip probe: %w", err)
		}
		ds = append(ds, time.Since(t0))
	}
	return medianMS(ds), nil
}

func medianMS(ds []time.Duration) float64 {
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Nanoseconds()) / 1e6
}
