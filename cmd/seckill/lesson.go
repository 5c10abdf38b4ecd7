package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/internal/lesson"
	"github.com/seckill-lab/seckill/internal/stack"
)

// runLesson maps `seckill lesson list | N | all` to package lesson.
func runLesson(ctx context.Context, args []string) error {
	fs := newFlagSet("lesson")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: seckill lesson list | N | NAME | all [flags]\n\nThe workshop: the source articles' story as lessons, in order, each run against the local stack.")
		fs.PrintDefaults()
	}
	dir := fs.String("dir", stack.DefaultDir, "run directory of the local stack")
	short := fs.Bool("short", false, "smaller loads (seconds per lesson; the tests')")
	seed := fs.Int64("seed", 1, "seed of every load")
	repeat := fs.Int("repeat", 0, fmt.Sprintf("runs of each failure story (default %d, 1 with --short)", lesson.DefaultRepeat))
	out := fs.String("out", "", "report directory of lesson all (default: a new results/course-<timestamp>/)")
	if len(args) == 0 {
		fs.Usage()
		return exitError{code: 2, msg: "lesson: say list, a lesson's number or name, or all"}
	}
	what := args[0]
	if what == "-h" || what == "--help" || what == "help" {
		fs.Usage()
		return flag.ErrHelp
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return exitError{code: 2, msg: err.Error()}
	}
	if fs.NArg() > 0 {
		return exitError{code: 2, msg: fmt.Sprintf("lesson: unexpected argument %q", fs.Arg(0))}
	}
	if what == "list" {
		return lesson.WriteList(os.Stdout)
	}
	if err := checkBounds(fs, bound{name: "repeat", min: 1, max: 100, omit: "0"}); err != nil {
		return err
	}
	o := lesson.Options{Dir: *dir, Short: *short, Seed: *seed, Repeat: *repeat, Progress: os.Stderr}
	began := time.Now()
	var err error
	if o.OutDir = *out; o.OutDir == "" {
		if o.OutDir, err = bench.NewOutDir("results", "course-", began); err != nil {
			return err
		}
	}
	if what == "all" {
		outs, err := lesson.RunAll(ctx, o)
		c := lesson.Course{Date: began.UTC(), Short: *short, WallS: time.Since(began).Seconds(), Outcomes: outs}
		if werr := lesson.Write(o.OutDir, c); werr != nil && err == nil {
			err = werr
		}
		if serr := lesson.WriteSummary(os.Stdout, outs); serr != nil && err == nil {
			err = serr
		}
		fmt.Fprintf(os.Stderr, "\nthe course: %.0f s; report in %s (course.html, course.md, course.json)\n", c.WallS, o.OutDir)
		return err
	}
	l, err := lesson.Find(what)
	if err != nil {
		return exitError{code: 2, msg: err.Error()}
	}
	if err := lesson.WriteLesson(os.Stdout, l); err != nil {
		return err
	}
	res, err := lesson.Run(ctx, l, o)
	if err != nil {
		return err
	}
	if err := lesson.WriteOutcome(os.Stdout, l, res); err != nil {
		return err
	}
	// The lesson's own course report: its charts, where to look, links.
	c := lesson.Course{Date: began.UTC(), Short: *short, WallS: time.Since(began).Seconds(), Outcomes: []lesson.Outcome{res}}
	if err := lesson.Write(o.OutDir, c); err != nil {
		return err
	}
	fmt.Printf("  course page: %s\n", filepath.Join(o.OutDir, "course.html"))
	return nil
}
