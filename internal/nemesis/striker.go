package nemesis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/lockimpl"
)

// Record is one fault as it went.
type Record struct {
	Fault
	// Hit is what it hit: the component a leader target resolved to, or
	// what the stack says it did.
	Hit string `json:"hit,omitempty"`
	// StartS is when it began and HealedS when it had been undone (the
	// component answering again, the link clean; for a failover, when
	// the Sentinels named the new primary), in seconds since the load's
	// start.
	StartS  float64 `json:"start_s"`
	HealedS float64 `json:"healed_s"`
	Made    bool    `json:"made"`
	Healed  bool    `json:"healed"`
	// SalesGapS is how long sales stopped around it (bench.Strike's);
	// GapOpen: they never resumed before the load ended.
	SalesGapS float64 `json:"sales_gap_s"`
	GapOpen   bool    `json:"sales_gap_open,omitempty"`
	// Error says why it was not made, or not healed.
	Error string `json:"error,omitempty"`
}

// striker carries the schedule out beside the bench's load
// (bench.Striker).
type striker struct {
	dir      string
	layout   Layout
	plan     []Fault
	progress io.Writer

	mu      sync.Mutex
	records []Record
}

// Run makes every fault of the plan at its time from t0 and undoes it
// after its time (or when ctx ends: the load is over), and returns a
// strike for each fault made, in plan order.
func (s *striker) Run(ctx context.Context, _ fleet.Fleet, t0 time.Time) ([]bench.Strike, error) {
	s.records = make([]Record, len(s.plan))
	var wg sync.WaitGroup
	for i, f := range s.plan {
		s.records[i].Fault = f
		wg.Go(func() { s.one(ctx, i, t0) })
	}
	wg.Wait()
	var out []bench.Strike
	var errs []error
	for _, r := range s.records {
		if r.Made {
			out = append(out, bench.NewStrike(r.describe(), "nemesis", secs(r.StartS), secs(r.HealedS-r.StartS)))
		}
		if r.Made && !r.Healed {
			errs = append(errs, fmt.Errorf("%s: %s", r.describe(), r.Error))
		}
	}
	return out, errors.Join(errs...)
}

// one makes fault i at its time and undoes it after its time.
func (s *striker) one(ctx context.Context, i int, t0 time.Time) {
	r := &s.records[i]
	if lockimpl.Sleep(ctx, time.Until(t0.Add(r.Start))) != nil {
		r.Error = "not made: the load ended first"
		return
	}
	target := r.Target
	if name, ok := strings.CutPrefix(target, LeaderPrefix); ok {
		leader, err := s.leader(ctx, name)
		if err != nil {
			r.Error = "not made: " + err.Error()
			s.say("%6.1fs %s: %s", time.Since(t0).Seconds(), r.Kind, r.Error)
			return
		}
		target = leader
	}
	began := time.Now()
	did, end, err := stack.Begin(ctx, s.dir, stack.Fault{Kind: r.Kind, Target: target, Delay: r.Delay})
	if err != nil {
		r.Error = "not made: " + err.Error()
		s.say("%6.1fs %s %s: %s", time.Since(t0).Seconds(), r.Kind, target, r.Error)
		return
	}
	r.Made, r.Hit, r.StartS = true, did, began.Sub(t0).Seconds()
	s.say("%6.1fs %s", r.StartS, did)
	if end != nil {
		_ = lockimpl.Sleep(ctx, time.Until(began.Add(r.For)))
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if err := end(uctx); err != nil {
			r.Error = "not healed: " + err.Error()
			r.HealedS = time.Since(t0).Seconds()
			s.say("%6.1fs %s", r.HealedS, r.Error)
			return
		}
	}
	r.Healed, r.HealedS = true, time.Since(t0).Seconds()
	s.say("%6.1fs healed: %s", r.HealedS, did)
}

// leader is the member of link group name that leads now (role leader or
// master).
func (s *striker) leader(ctx context.Context, name string) (string, error) {
	g := s.layout.Needed
	if g.Link != name {
		return "", fmt.Errorf("no group %s", name)
	}
	st, err := stack.Load(s.dir)
	if err != nil {
		return "", err
	}
	for _, m := range g.Members {
		c, ok := st.Component(m)
		if !ok {
			continue
		}
		_, ks, ok := server.KindOf(c.Kind)
		if !ok || ks.Role == nil {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		role, err := ks.Role(rctx, c.Addr)
		cancel()
		if err == nil && (role == "leader" || role == "master") {
			return m, nil
		}
	}
	return "", fmt.Errorf("no member of %s leads now", name)
}

// say writes one progress line.
func (s *striker) say(format string, args ...any) {
	if s.progress == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.progress, "nemesis "+format+"\n", args...)
}

// describe is the fault as the report names it.
func (r Record) describe() string {
	if r.Hit == "" {
		return r.Fault.String()
	}
	if link, ok := strings.CutPrefix(r.Target, LeaderPrefix); ok {
		return r.Hit + " (the " + link + " leader)"
	}
	return r.Hit
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
