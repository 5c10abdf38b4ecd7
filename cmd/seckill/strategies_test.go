package main

import (
	"strings"
	"testing"

	"github.com/seckill-lab/seckill/stock/catalog"
)

// TestWriteStrategies: `seckill strategies` names the catalogue's verdict
// "FLAWED BY DESIGN", yes or no, never the run's "safe at this setting".
func TestWriteStrategies(t *testing.T) {
	var b strings.Builder
	if err := writeStrategies(&b, catalog.Strategies()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if !strings.Contains(lines[0], "FLAWED BY DESIGN") {
		t.Errorf("header %q lacks FLAWED BY DESIGN", lines[0])
	}
	col := strings.Index(lines[0], "FLAWED BY DESIGN")
	for i, s := range catalog.Strategies() {
		want := "no"
		if s.Flawed {
			want = "yes"
		}
		if got := strings.Fields(lines[i+1][col:])[0]; got != want {
			t.Errorf("%s: %s %q, want %q", s.Name, catalog.ColFlawed, got, want)
		}
	}
}
