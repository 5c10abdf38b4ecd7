package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/internal/lesson"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// TestReportAgain: seckill report prints a saved bench report's table,
// compact table and conclusion, and a saved course's summaries, from
// their directories or their files.
func TestReportAgain(t *testing.T) {
	dir := t.TempDir()
	row := func(name string, safe bool, oversold, okps float64) bench.Summary {
		return bench.Summary{Name: name, Strategy: name, Repeats: 1, ExpectedCorrect: safe,
			Oversold: bench.Stat{Median: oversold, Max: oversold}, OKPerSec: bench.Stat{Median: okps, Min: okps, Max: okps},
			InvariantsPassed: 11, InvariantsTotal: 11}
	}
	rep := bench.Report{Environment: bench.Environment{CPUs: 2, Instances: 3, Durability: "default"},
		Runs:    []bench.RunResult{{Concurrency: 50, Requests: 500, InitialStock: 300}},
		Summary: []bench.Summary{row(catalog.None, false, 200, 3000), row(catalog.Redis, true, 0, 500), row(catalog.SQLAtomic, true, 0, 1500)}}
	course := lesson.Course{Outcomes: []lesson.Outcome{{Lesson: 3, Verdict: lesson.Reproduced, Ours: "none 3062 req/s",
		Figures: []lesson.Figure{{Unit: lesson.ShortUnitRatio, Bars: []lesson.FigureBar{{Label: "mutex/none", Value: 0.39}}}}}}}
	for name, v := range map[string]any{"bench/report.json": rep, "course/course.json": course} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		path, as string
		want     []string
	}{
		{"bench", reportAsTable, []string{"strategy    " + bench.ColSafe, "lock wait ms", "\nconclusion:\n"}},
		{"bench/report.json", reportAsCompact, []string{"strategy    " + catalog.ColFlawed + "  " + bench.ColSafe, "none        yes"}},
		{"bench", reportAsConclusion, []string{"Oversold (median units): none (200), flawed by design.", "sql-atomic, at 1500 ok/s"}},
		{"course", reportAsTable, []string{"the source | ours", "none 3062 req/s"}},
		{"course/course.json", reportAsCompact, []string{"deciding figure", "mutex/none 0.39"}},
	} {
		var b strings.Builder
		if err := writeSavedReport(&b, filepath.Join(dir, tc.path), tc.as); err != nil {
			t.Errorf("%s --as %s: %v", tc.path, tc.as, err)
			continue
		}
		// The conclusion is wrapped to the terminal's width: compare its
		// words, not where its lines break.
		flat := strings.Join(strings.Fields(b.String()), " ")
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) && !strings.Contains(flat, strings.Join(strings.Fields(w), " ")) {
				t.Errorf("%s --as %s lacks %q:\n%s", tc.path, tc.as, w, b.String())
			}
		}
	}
	if err := writeSavedReport(&strings.Builder{}, filepath.Join(dir, "course"), reportAsConclusion); err == nil {
		t.Error("a course's conclusion: no error")
	}
	if err := writeSavedReport(&strings.Builder{}, dir, reportAsTable); err == nil {
		t.Error("a directory without a report: no error")
	}
}
