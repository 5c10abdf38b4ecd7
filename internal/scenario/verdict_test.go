package scenario

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerdictConfidence: every "k of n runs" of the table and of the
// failures has its 95 % interval beside it, and an ok verdict, which rests
// on 0 oversold in each row, says what the rows' runs rule out.
func TestVerdictConfidence(t *testing.T) {
	rows := []Row{
		{Strategy: "redis", Protection: ProtectNone, Runs: 3, RunsOversold: 3, Oversold: 9, Errors: map[string]int{}},
		{Strategy: "redis", Protection: ProtectFencing, Runs: 3, Errors: map[string]int{}},
	}
	ok := &Result{Scenario: "pause-holder", Rows: rows}
	var b bytes.Buffer
	if err := WriteTable(&b, ok); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"95 % interval", "3 of 3 runs  29–100 %", "0 of 3 runs  0–71 %",
		"verdict: ok (no fenced strategy oversold, every 2xx has its order; each row's 3 runs rule out only rates above 71 %)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	dir := t.TempDir()
	if err := write(dir, ok); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"scenario.md":   "every 2xx has its order; each row's 3 runs rule out only rates above 71 %.",
		"scenario.html": "every 2xx has its order; each row&#39;s 3 runs rule out only rates above 71 %.",
	} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(got), want) {
			t.Errorf("%s lacks %q", name, want)
		}
	}

	rows[1].RunsOversold, rows[1].Oversold, rows[1].RunsMostlyErrors = 1, 2, 1
	got := strings.Join(failures(rows, nil), "; ")
	for _, want := range []string{
		"redis with fencing oversold 2 in 1 of 3 runs (95 % interval 0.8–91 %)",
		"redis (fencing): 1 of 3 runs (95 % interval 0.8–91 %) lost most of their purchases to errors",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("failures lack %q: %s", want, got)
		}
	}
}
