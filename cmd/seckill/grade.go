package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/seckill-lab/seckill/exercises"
	"github.com/seckill-lab/seckill/internal/grade"
	"github.com/seckill-lab/seckill/internal/stack"
)

// runGrade maps the flags of `seckill grade`; the logic is internal/grade.
// Unless --built, it first builds the seckill binary the stack runs from
// this checkout (so it holds the student's code) and re-executes it.
func runGrade(ctx context.Context, args []string) error {
	fs, dir := stackFlags("grade")
	key := fs.Bool("key", false, "grade the answer key (the project's own strategy) instead of your lock")
	parts := fs.String("parts", "", "only these parts, comma-separated: "+strings.Join([]string{grade.PartConformance, grade.PartBench, grade.PartFaults}, ", ")+" (default all)")
	built := fs.Bool("built", false, "the binary already holds the checkout's code: do not build (set by grade)")
	buildS := fs.Float64("build-s", 0, "seconds the build before --built took (set by grade when it re-executes)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: seckill grade EXERCISE [--dir DIR] [--key]\n       seckill grade list\n\n"+
			"Scores your lock of a workshop exercise (exercises/EXERCISE) on your stack: the conformance\n"+
			"suite with the properties the exercise requires, a bench with its invariants, and the\n"+
			"exercise's fault scenarios. It builds the lab from this checkout and restarts the stack's\n"+
			"instances first. Prints a score sheet (中文 / English); exits 1 when a check fails.")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitError{code: 2, msg: "grade: name one exercise (" + strings.Join(exercises.Names(), ", ") + "), or list"}
	}
	if pos[0] == "list" {
		for _, e := range exercises.All() {
			fmt.Printf("%d  %-10s %s / %s\n   exercises/%s/lock.go; answer key: %s (strategy %s)\n", e.N, e.Name, e.Title.ZH, e.Title.EN, e.Name, e.KeyPath, e.Key)
		}
		return nil
	}
	ex, err := exercises.Find(pos[0])
	if err != nil {
		return exitError{code: 2, msg: "grade: " + err.Error()}
	}
	var want []string
	if *parts != "" {
		want = strings.Split(*parts, ",")
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	root, err := grade.ModuleRoot(wd)
	if err != nil {
		return exitError{code: 2, msg: "grade: " + err.Error()}
	}
	st, err := stack.Load(*dir)
	if err != nil {
		if errors.Is(err, stack.ErrNotRunning) {
			return exitError{code: 2, msg: fmt.Sprintf("grade: no stack in %s: start yours with `seckill lab new NAME` (a workshop) or `seckill up --dir %s`, then grade with --dir", *dir, *dir)}
		}
		return err
	}
	if err := grade.CheckServers(ex, st); err != nil {
		return exitError{code: 2, msg: err.Error()}
	}
	if !*built {
		fmt.Fprintf(os.Stderr, "grade: building %s from %s (your code goes into the lab)\n", st.Binary, root)
		t0 := time.Now()
		if err := grade.Build(ctx, "", root, st.Binary); err != nil {
			return err
		}
		argv := append([]string{st.Binary, "grade", "--built", "--build-s", strconv.FormatFloat(time.Since(t0).Seconds(), 'f', 1, 64)}, args...)
		if err := syscall.Exec(st.Binary, argv, os.Environ()); err != nil {
			return fmt.Errorf("grade: run the new binary %s: %w", st.Binary, err)
		}
	}
	sheet, err := grade.Run(ctx, grade.Options{Exercise: ex, Dir: st.Dir, Root: root, Key: *key, Parts: want, Progress: os.Stderr, BuiltS: *buildS})
	if sheet != nil {
		if werr := sheet.Write(os.Stdout); werr != nil {
			return werr
		}
	}
	if errors.Is(err, grade.ErrFailed) {
		return exitError{code: 1}
	}
	return err
}
