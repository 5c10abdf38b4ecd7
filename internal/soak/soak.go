// Package soak owns the long run: a steady purchase load on a running
// stack for a set time (an hour by default), while every process's RSS and
// every instance's goroutines and open file descriptors are sampled and one
// event stream is kept open from start to end. The bench of the whole run
// checks its safety as any bench does (mutual exclusion over every sale);
// soak adds what only time shows: growth after the warm-up, which is a leak
// to fix. It writes soak.json, soak.md and soak.svg beside the bench's
// report.
package soak

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/bench/adminclient"
	"github.com/seckill-lab/seckill/bench/chart"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/internal/supervise"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// Options of Run. Zero values take the defaults given.
type Options struct {
	// Dir is the running stack's directory (required).
	Dir string
	// For is how long the load runs. Default 1h.
	For time.Duration
	// Rate is purchases per second. Default 40.
	Rate int
	// Strategy is the lock the purchases run under. Default redis.
	Strategy string
	// Every is the sampling interval. Default 10s (For/20 when shorter).
	Every time.Duration
	// Warmup is when growth starts to count. Default For/6.
	Warmup time.Duration
	// GoodsID is the goods sold. Default 900001.
	GoodsID int64
	// OutDir receives soak.json, soak.md, soak.svg and the bench's report
	// (bench/). Required.
	OutDir   string
	Progress io.Writer
}

// ErrInvalid wraps a bad option.
var ErrInvalid = errors.New("invalid soak options")

func (o *Options) defaults() error {
	if o.For == 0 {
		o.For = time.Hour
	}
	if o.Rate == 0 {
		o.Rate = 40
	}
	if o.Strategy == "" {
		o.Strategy = catalog.Redis
	}
	if o.Every == 0 {
		o.Every = min(10*time.Second, o.For/20)
	}
	if o.Warmup == 0 {
		o.Warmup = o.For / 6
	}
	if o.GoodsID == 0 {
		o.GoodsID = 900_001
	}
	switch {
	case o.Dir == "" || o.OutDir == "":
		return fmt.Errorf("%w: the stack's directory and an output directory are required", ErrInvalid)
	case o.For < 5*time.Second || o.For > 24*time.Hour:
		return fmt.Errorf("%w: --for must be between 5s and 24h, got %s", ErrInvalid, o.For)
	case o.Rate < 1 || o.Rate > 5000:
		return fmt.Errorf("%w: --rate must be between 1 and 5000 purchases/s, got %d", ErrInvalid, o.Rate)
	case o.Every <= 0 || o.Every > o.For:
		return fmt.Errorf("%w: --every must be positive and at most --for, got %s", ErrInvalid, o.Every)
	case o.Warmup < 0 || o.Warmup >= o.For:
		return fmt.Errorf("%w: --warmup must be below --for, got %s", ErrInvalid, o.Warmup)
	}
	return nil
}

// Sample is one look at the stack.
type Sample struct {
	AtS float64 `json:"at_s"`
	// RSSMiB is every running process's resident memory, by component.
	RSSMiB map[string]float64 `json:"rss_mib"`
	// Goroutines and OpenFDs are the instances' (from their /metrics).
	Goroutines map[string]float64 `json:"goroutines"`
	OpenFDs    map[string]float64 `json:"open_fds"`
	// CacheMiB is what a server holds on purpose, by component: MariaDB's
	// InnoDB buffer pool pages that hold data (the orders the soak
	// inserts are cached there, up to innodb_buffer_pool_size). Growth it
	// accounts for is not a leak.
	CacheMiB map[string]float64 `json:"cache_mib,omitempty"`
}

// Growth is one series' change from the end of the warm-up to the end.
type Growth struct {
	Series string  `json:"series"` // "rss_mib inst-1", "goroutines inst-2", ...
	After  float64 `json:"after_warmup"`
	End    float64 `json:"end"`
	// Cached is the part of the growth the server's cache accounts for
	// (Sample.CacheMiB), not counted against it.
	Cached float64 `json:"cached,omitempty"`
	// Leak is set when the growth beyond Cached is beyond the noise
	// allowed: 20% and LeakFloor of the series' unit.
	Leak bool `json:"leak"`
}

// LeakFloor is the absolute growth below which a series is not a leak,
// by metric: the noise of a busy process over an hour.
var LeakFloor = map[string]float64{"rss_mib": 16, "goroutines": 20, "open_fds": 10}

// Result is a soak's outcome.
type Result struct {
	Stack    string        `json:"stack"` // topology and instances
	For      string        `json:"for"`
	Rate     int           `json:"rate"`
	Strategy string        `json:"strategy"`
	Warmup   string        `json:"warmup"`
	Samples  []Sample      `json:"samples"`
	Growth   []Growth      `json:"growth"`
	Leaks    []string      `json:"leaks"`
	Stream   StreamOutcome `json:"event_stream"`
	// Bench is the whole run's summary: sales, oversold, the invariants.
	OK                 int               `json:"ok"`
	Oversold           int               `json:"oversold"`
	Outcomes           map[string]int    `json:"outcomes"`
	Invariants         []bench.Invariant `json:"invariants"`
	InvariantsPassed   int               `json:"invariants_passed"`
	InvariantsDecided  int               `json:"invariants_decided"`
	MutualExclusion    string            `json:"mutual_exclusion"`
	BenchReport        string            `json:"bench_report"`
	Machine            string            `json:"machine"`
	Began              time.Time         `json:"began"`
	WallS              float64           `json:"wall_s"`
	Command            string            `json:"command"`
	mutualExclusionMet bool
}

// StreamOutcome is what happened to the event stream kept open.
type StreamOutcome struct {
	Instance string `json:"instance"`
	Events   int    `json:"events"`
	// OpenAtEnd: it was still open when the load ended; EndedAtS, when
	// not, is when it ended and Err why.
	OpenAtEnd bool    `json:"open_at_end"`
	EndedAtS  float64 `json:"ended_at_s,omitempty"`
	Err       string  `json:"error,omitempty"`
}

// Failures are what makes a soak fail: a leak, an event stream that did
// not last, a broken or unchecked mutual exclusion, an oversell.
func (r *Result) Failures() []string {
	out := slices.Clone(r.Leaks)
	if !r.Stream.OpenAtEnd {
		out = append(out, fmt.Sprintf("the event stream of %s ended after %.0f s: %s", r.Stream.Instance, r.Stream.EndedAtS, r.Stream.Err))
	}
	if !r.mutualExclusionMet {
		out = append(out, "mutual exclusion: "+r.MutualExclusion)
	}
	if r.Oversold > 0 {
		out = append(out, fmt.Sprintf("oversold %d", r.Oversold))
	}
	return out
}

// Run soaks the stack in o.Dir: the event stream kept open and the
// sampler running through the load, then the bench's summary and the
// growth of every series after the warm-up.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	st, err := stack.Load(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("soak: %w", err)
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("soak: %w", err)
	}
	insts := st.InstanceURLs()
	if len(insts) == 0 || st.AdminToken == "" {
		return nil, fmt.Errorf("soak: the stack in %s has no instances or no admin token: seckill up --dir %s", o.Dir, o.Dir)
	}
	res := &Result{Stack: fmt.Sprintf("%s topology, %d instances", st.Topology, len(insts)), For: o.For.String(), Rate: o.Rate,
		Strategy: o.Strategy, Warmup: o.Warmup.String(), Machine: machine(), Began: time.Now().UTC(),
		Command: fmt.Sprintf("seckill soak --dir %s --for %s --rate %d --strategy %s --out %s", o.Dir, o.For, o.Rate, o.Strategy, o.OutDir)}
	began := time.Now()

	// The event stream kept open for the whole soak.
	sctx, stopStream := context.WithCancel(ctx)
	defer stopStream()
	res.Stream.Instance = insts[0]
	w, err := watchEvents(sctx, st.AdminToken, &res.Stream, began)
	if err != nil {
		return nil, err
	}

	// One pool for the samples' reads of MariaDB's status.
	db, err := sql.Open("mysql", st.MySQLDSN())
	if err != nil {
		return nil, fmt.Errorf("soak: %w", err)
	}
	defer db.Close()
	stopSampler := startSampler(ctx, o, db, began, res)

	requests := int(float64(o.Rate) * o.For.Seconds())
	fleet := st.Fleet()
	fleet.Instances = insts
	rep, err := bench.Run(ctx, bench.Options{
		Strategies: []string{o.Strategy}, Stock: requests, Requests: requests, Rate: o.Rate, Concurrency: 50,
		GoodsID: o.GoodsID, Fleet: fleet,
		Warmup: -1, CalibrateRequests: -1, RunTimeout: o.For + 10*time.Minute,
		OutDir: filepath.Join(o.OutDir, "bench"), CommandLine: strings.Fields(res.Command),
	})
	// The stream must be open when the load ends: look before closing it.
	w.markOpen()
	stopSampler()
	res.Samples = append(res.Samples, sample(ctx, o.Dir, db, began))
	stopStream()
	<-w.done
	if err != nil {
		return res, fmt.Errorf("soak: the load: %w", err)
	}
	res.summarize(rep.Runs[0])
	res.Growth, res.Leaks = growth(res.Samples, o.Warmup.Seconds())
	res.WallS = time.Since(began).Seconds()
	return res, write(o.OutDir, res)
}

// eventWatch counts the events of out.Instance's stream into out until
// the stream ends (when and why, in out) or its context is cancelled.
type eventWatch struct {
	mu   sync.Mutex
	out  *StreamOutcome
	done chan struct{} // closed when the stream is no longer read
}

// watchEvents opens out.Instance's event stream and reads it until ctx
// ends; began is the soak's start, which out's times count from.
func watchEvents(ctx context.Context, adminToken string, out *StreamOutcome, began time.Time) (*eventWatch, error) {
	body, err := adminclient.New(adminToken).OpenEvents(ctx, out.Instance, false)
	if err != nil {
		return nil, fmt.Errorf("soak: open the event stream of %s: %w", out.Instance, err)
	}
	w := &eventWatch{out: out, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		adminclient.ReadEvents(body, func(it adminclient.Item) bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			if it.Err != nil {
				out.EndedAtS, out.Err = time.Since(began).Seconds(), it.Err.Error()
				return false
			}
			out.Events++
			return true
		})
	}()
	return w, nil
}

// markOpen records whether the stream is still open now.
func (w *eventWatch) markOpen() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.out.OpenAtEnd = w.out.Err == ""
}

// startSampler samples the stack into res.Samples at once and every
// o.Every; the function it returns stops it and waits for it.
func startSampler(ctx context.Context, o Options, db *sql.DB, began time.Time, res *Result) (stop func()) {
	samplerCtx, stopSampler := context.WithCancel(ctx)
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		t := time.NewTicker(o.Every)
		defer t.Stop()
		for {
			s := sample(samplerCtx, o.Dir, db, began)
			res.Samples = append(res.Samples, s)
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "soak %5.0fs: %s\n", s.AtS, brief(s))
			}
			select {
			case <-samplerCtx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		stopSampler()
		<-samplerDone
	}
}

// summarize keeps the bench run's sales, oversold, outcomes and
// invariants, and whether mutual exclusion was checked and held.
func (res *Result) summarize(run bench.RunResult) {
	res.OK, res.Oversold, res.Outcomes = run.OK, run.Oversold, run.Outcomes
	res.Invariants, res.InvariantsPassed, res.InvariantsDecided = run.Invariants, run.InvariantsPassed, run.InvariantsTotal
	res.BenchReport = filepath.Join("bench", "report.html")
	for _, inv := range run.Invariants {
		if inv.Name == bench.InvMutualExclusion {
			res.MutualExclusion, res.mutualExclusionMet = inv.Detail, inv.Pass && inv.Applicable
		}
	}
	if res.MutualExclusion == "" {
		res.MutualExclusion = "not checked"
	}
}

// sample reads every component's RSS and every instance's goroutines and
// open file descriptors. A component that does not answer is left out of
// the sample (a gap in its line), not an error.
func sample(ctx context.Context, dir string, db *sql.DB, began time.Time) Sample {
	s := Sample{AtS: time.Since(began).Seconds(), RSSMiB: map[string]float64{}, Goroutines: map[string]float64{}, OpenFDs: map[string]float64{}, CacheMiB: map[string]float64{}}
	st, err := stack.Load(dir)
	if err != nil {
		return s
	}
	if c, ok := st.Component("mariadb"); ok {
		if mib, err := bufferPoolData(ctx, db); err == nil {
			s.CacheMiB[c.Name] = mib
		}
	}
	for _, c := range st.Components {
		if rss := supervise.RSS(c.Pid); rss > 0 {
			s.RSSMiB[c.Name] = float64(rss) / (1 << 20)
		}
		if c.Kind != stack.KindInstance {
			continue
		}
		m, err := scrape(ctx, c.URL()+"/metrics", "go_goroutines", "process_open_fds")
		if err != nil {
			continue
		}
		s.Goroutines[c.Name], s.OpenFDs[c.Name] = m["go_goroutines"], m["process_open_fds"]
	}
	return s
}

// bufferPoolData is the InnoDB buffer pool's data in MiB.
func bufferPoolData(ctx context.Context, db *sql.DB) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var name string
	var bytes float64
	if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_bytes_data'").Scan(&name, &bytes); err != nil {
		return 0, fmt.Errorf("soak: buffer pool: %w", err)
	}
	return bytes / (1 << 20), nil
}

// scrape reads the named gauges of a Prometheus text page.
func scrape(ctx context.Context, url string, names ...string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if ok && slices.Contains(names, name) {
			if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
				out[name] = v
			}
		}
	}
	return out, sc.Err()
}

// series flattens the samples into named series ("rss_mib inst-1").
func series(samples []Sample) map[string][][2]float64 {
	out := map[string][][2]float64{}
	add := func(metric string, at float64, m map[string]float64) {
		for k, v := range m {
			out[metric+" "+k] = append(out[metric+" "+k], [2]float64{at, v})
		}
	}
	for _, s := range samples {
		add("rss_mib", s.AtS, s.RSSMiB)
		add("goroutines", s.AtS, s.Goroutines)
		add("open_fds", s.AtS, s.OpenFDs)
	}
	return out
}

// growth compares each series' median over the first sixth after the
// warm-up with its median over the last sixth of the run. A series grows
// into a leak beyond 20% and its metric's LeakFloor.
func growth(samples []Sample, warmupS float64) ([]Growth, []string) {
	var out []Growth
	var leaks []string
	all := series(samples)
	cache := map[string][][2]float64{}
	for _, s := range samples {
		for k, v := range s.CacheMiB {
			cache[k] = append(cache[k], [2]float64{s.AtS, v})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(all)) {
		pts := all[name]
		var after []float64
		for _, p := range pts {
			if p[0] >= warmupS {
				after = append(after, p[1])
			}
		}
		if len(after) < 2 {
			continue
		}
		w := max(len(after)/6, 1)
		g := Growth{Series: name, After: median(after[:w]), End: median(after[len(after)-w:])}
		metric, comp, _ := strings.Cut(name, " ")
		d := g.End - g.After
		if c := window(cache[comp], warmupS); metric == "rss_mib" && len(c) >= 2 {
			// What the server caches on purpose grew too: only the rest
			// of the growth can be a leak.
			wc := max(len(c)/6, 1)
			g.Cached = median(c[len(c)-wc:]) - median(c[:wc])
			d -= g.Cached
		}
		if d > LeakFloor[metric] && d > 0.2*g.After {
			g.Leak = true
			leaks = append(leaks, fmt.Sprintf("%s grew from %.1f after the warm-up to %.1f at the end", name, g.After, g.End))
		}
		out = append(out, g)
	}
	return out, leaks
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return math.NaN()
	}
	return s[len(s)/2]
}

// brief is one progress line of a sample.
func brief(s Sample) string {
	var total float64
	for _, v := range s.RSSMiB {
		total += v
	}
	var g, fds float64
	for k := range s.Goroutines {
		g += s.Goroutines[k]
		fds += s.OpenFDs[k]
	}
	return fmt.Sprintf("RSS %.0f MiB in %d processes, instances: %.0f goroutines, %.0f open fds", total, len(s.RSSMiB), g, fds)
}

// write writes soak.json, soak.svg (one chart per metric, stacked in one
// file each: soak-rss.svg, soak-goroutines.svg, soak-fds.svg) and soak.md.
func write(dir string, r *Result) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "soak.json"), b, 0o644); err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	all := series(r.Samples)
	charts := []struct{ metric, file, y string }{
		{"rss_mib", "soak-rss.svg", "RSS MiB"},
		{"goroutines", "soak-goroutines.svg", "goroutines"},
		{"open_fds", "soak-fds.svg", "open file descriptors"},
	}
	for _, c := range charts {
		var lines []chart.Line
		for _, name := range slices.Sorted(maps.Keys(all)) {
			metric, comp, _ := strings.Cut(name, " ")
			if metric != c.metric {
				continue
			}
			l := chart.Line{Label: comp}
			for _, p := range all[name] {
				l.X, l.Y = append(l.X, p[0]/60), append(l.Y, p[1])
			}
			lines = append(lines, l)
		}
		svg := chart.LineChart(c.y+" per process over the soak", "minutes", c.y, lines, false)
		if err := os.WriteFile(filepath.Join(dir, c.file), svg, 0o644); err != nil {
			return fmt.Errorf("soak: %w", err)
		}
	}
	return os.WriteFile(filepath.Join(dir, "soak.md"), []byte(Markdown(r)), 0o644)
}

// Markdown is the soak's summary: conditions, the safety figures, growth
// per series, the verdict and the command.
func Markdown(r *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Soak of %s: %s at %d purchases/s under %s, on %s; growth counted after a %s warm-up.\n\n",
		r.Stack, r.For, r.Rate, r.Strategy, r.Machine, r.Warmup)
	fmt.Fprintf(&b, "- sales %d, oversold %d, invariants %d/%d decided passed\n", r.OK, r.Oversold, r.InvariantsPassed, r.InvariantsDecided)
	fmt.Fprintf(&b, "- mutual exclusion: %s\n", r.MutualExclusion)
	open := "open at the end"
	if !r.Stream.OpenAtEnd {
		open = fmt.Sprintf("ended after %.0f s (%s)", r.Stream.EndedAtS, r.Stream.Err)
	}
	fmt.Fprintf(&b, "- the event stream of %s: %s, %d events read\n\n", r.Stream.Instance, open, r.Stream.Events)
	b.WriteString("| series | after warm-up | end | of it cached | leak |\n|---|---|---|---|---|\n")
	for _, g := range r.Growth {
		leak := "no"
		if g.Leak {
			leak = "**yes**"
		}
		cached := ""
		if g.Cached != 0 {
			cached = fmt.Sprintf("%+.1f (InnoDB buffer pool data)", g.Cached)
		}
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %s | %s |\n", g.Series, g.After, g.End, cached, leak)
	}
	if fs := r.Failures(); len(fs) > 0 {
		fmt.Fprintf(&b, "\n**Verdict: failed.** %s\n", strings.Join(fs, "; "))
	} else {
		b.WriteString("\n**Verdict: ok.** Flat after the warm-up, the stream open to the end, mutual exclusion over every sale.\n")
	}
	fmt.Fprintf(&b, "\nRepeat: `%s` (charts in OUT: soak-rss.svg, soak-goroutines.svg, soak-fds.svg; the bench's report: %s)\n",
		PortableCommand(r.Command), r.BenchReport)
	return b.String()
}

// pathFlag is a --dir or --out flag and its value in a command line.
var pathFlag = regexp.MustCompile(`--(dir|out)[ =]\S+`)

// PortableCommand is a long run's command line (a soak's, a nemesis's)
// with the values of --dir and --out (paths of the machine that ran it)
// written DIR and OUT, so the summary names no path a clone lacks.
func PortableCommand(cmd string) string {
	return pathFlag.ReplaceAllStringFunc(cmd, func(f string) string {
		if strings.HasPrefix(f, "--dir") {
			return "--dir DIR"
		}
		return "--out OUT"
	})
}

// machine names the machine the soak ran on: CPUs, memory, OS.
func machine() string {
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				if kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64); err == nil {
					mem = fmt.Sprintf(", %.0f GiB", kb/(1<<20))
				}
			}
		}
	}
	return fmt.Sprintf("%d CPUs%s, %s/%s", runtime.NumCPU(), mem, runtime.GOOS, runtime.GOARCH)
}

// window is the values of pts at or after fromS.
func window(pts [][2]float64, fromS float64) []float64 {
	var out []float64
	for _, p := range pts {
		if p[0] >= fromS {
			out = append(out, p[1])
		}
	}
	return out
}
