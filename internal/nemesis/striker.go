package nemesis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/internal/fault"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/stock"
)

// Record is one fault as it went.
type Record struct {
	Fault
	// Hit is what it hit: the component a leader target resolved to, or
	// what the stack says it did.
	Hit string `json:"hit,omitempty"`
	// StartS is when it began and HealedS when it had been undone (the
	// component answering again, the link clean; for a failover, when
	// the demoted primary replicates the new one), in seconds since the
	// load's start.
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
	// holder: pauses of an instance pause the lock's holder
	// (Options.PauseHolder), found through fleet's lock events.
	holder bool
	fleet  fleet.Fleet

	mu      sync.Mutex
	records []Record
}

// Run makes every fault of the plan at its time from t0 and undoes it
// after its time (or when ctx ends: the load is over), and returns a
// strike for each fault made, in plan order.
func (s *striker) Run(ctx context.Context, fl fleet.Fleet, t0 time.Time) ([]bench.Strike, error) {
	s.fleet = fl
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
	target, holding := r.Target, ""
	if name, ok := strings.CutPrefix(target, LeaderPrefix); ok {
		leader, err := s.leader(ctx, name)
		if err != nil {
			r.Error = "not made: " + err.Error()
			s.say("%6.1fs %s: %s", time.Since(t0).Seconds(), r.Kind, r.Error)
			return
		}
		target = leader
	}
	if s.holder && r.Kind == fault.Pause && slices.Contains(s.layout.Instances, target) {
		if inst, err := s.lockHolder(ctx); err == nil {
			target, holding = inst, " (holding the lock)"
			r.For = HolderTTL + HolderOvershoot
		} else {
			s.say("%6.1fs pause: no lock holder seen (%v): pausing %s", time.Since(t0).Seconds(), err, target)
		}
	}
	began := time.Now()
	did, end, err := stack.Begin(ctx, s.dir, stack.Fault{Kind: r.Kind, Target: target, Delay: r.Delay})
	if err != nil {
		r.Error = "not made: " + err.Error()
		s.say("%6.1fs %s %s: %s", time.Since(t0).Seconds(), r.Kind, target, r.Error)
		return
	}
	did += holding
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

// The settings of Options.PauseHolder.
const (
	// HolderWait bounds the wait for an instance to read the stock under
	// the lock.
	HolderWait = 5 * time.Second
	// HolderTTL is the lock's TTL meanwhile, and the holder's pause lasts
	// HolderOvershoot longer: past the TTL, and still short of the
	// client's 10 s timeout, so the paused purchase goes on when it
	// resumes and writes what it read before the pause.
	HolderTTL       = 3 * time.Second
	HolderOvershoot = 2 * time.Second
	// HolderWork is each purchase's work between its stock read and its
	// write: long enough for the pause, sent once the holder said it read
	// the stock, to land before the write.
	HolderWork = 3 * time.Millisecond
)

// lockHolder waits for the next instance to read the stock under the lock
// (a stock.EventRead) and names it: paused now, it holds the lock with a
// stock figure that goes stale while it sleeps.
func (s *striker) lockHolder(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, HolderWait)
	defer cancel()
	seen := make(chan string, len(s.fleet.Instances))
	for _, base := range s.fleet.Instances {
		go func() { // each on its own: one may be killed or paused by another fault
			ch, err := bench.SubscribeEvents(ctx, base, s.fleet.AdminToken)
			if err != nil {
				return
			}
			for ev := range ch {
				if ev.Kind == stock.EventRead {
					select {
					case seen <- ev.Instance:
					default:
					}
					return
				}
			}
		}()
	}
	select {
	case inst := <-seen:
		return inst, nil
	case <-ctx.Done():
		return "", fmt.Errorf("no instance read the stock under the lock within %s", HolderWait)
	}
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
