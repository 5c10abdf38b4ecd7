package cost

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"time"

	"github.com/seckill-lab/seckill/internal/netfault"
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
	go func() { _ = netfault.ServeEchoOn(ctx, ln) }()
	d, err := netfault.MeasureRTT(ctx, ln.Addr().String(), n)
	if err != nil {
		return 0, fmt.Errorf("round-trip probe: %w", err)
	}
	return float64(d.Nanoseconds()) / 1e6, nil
}

func medianMS(ds []time.Duration) float64 {
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Nanoseconds()) / 1e6
}
