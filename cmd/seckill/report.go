package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/internal/lesson"
)

// The renderings `seckill report --as` prints.
const (
	reportAsTable      = "table"
	reportAsCompact    = "compact"
	reportAsConclusion = "conclusion"
)

// runReport prints a saved report again, from its JSON: a bench's
// report.json (its table as the bench printed it, the compact table, or
// its conclusion) or a course's course.json (the summary `lesson all`
// printed, or the short one). scripts/readme.sh writes README.md's blocks
// with it.
func runReport(_ context.Context, args []string) error {
	fs := newFlagSet("report")
	as := fs.String("as", reportAsTable, "table (as the run printed it), compact, or conclusion (a bench's)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: seckill report [--as table|compact|conclusion] DIR|report.json|course.json\n\n"+
			"Prints a bench's or a course's report again from its JSON.")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitError{code: 2, msg: "report: give one report directory or JSON file"}
	}
	switch *as {
	case reportAsTable, reportAsCompact, reportAsConclusion:
	default:
		return exitError{code: 2, msg: fmt.Sprintf("report: --as %q: want table, compact or conclusion", *as)}
	}
	return writeSavedReport(os.Stdout, fs.Arg(0), *as)
}

// writeSavedReport renders the report at path (a directory holding
// report.json or course.json, or the file itself) as as says.
func writeSavedReport(w io.Writer, path, as string) error {
	file, err := reportFile(path)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if filepath.Base(file) == "course.json" {
		var c lesson.Course
		if err := json.Unmarshal(b, &c); err != nil {
			return fmt.Errorf("report: read %s: %w", file, err)
		}
		switch as {
		case reportAsCompact:
			return lesson.WriteShortSummary(w, c.Outcomes)
		case reportAsConclusion:
			return exitError{code: 2, msg: "report: --as conclusion: a course has none (a bench's report.json has)"}
		}
		return lesson.WriteSummary(w, c.Outcomes)
	}
	var rep bench.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("report: read %s: %w", file, err)
	}
	switch as {
	case reportAsCompact:
		return bench.WriteCompactTable(w, &rep)
	case reportAsConclusion:
		if _, err := fmt.Fprintln(w, bench.Conclusion(&rep)); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		return nil
	}
	return bench.WriteTable(w, &rep)
}

// reportFile is path itself, or the report.json or course.json in the
// directory path.
func reportFile(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	if !st.IsDir() {
		return path, nil
	}
	for _, name := range []string{"report.json", "course.json"} {
		f := filepath.Join(path, name)
		if _, err := os.Stat(f); err == nil {
			return f, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("report: %w", err)
		}
	}
	return "", fmt.Errorf("report: %s holds no report.json or course.json", path)
}
