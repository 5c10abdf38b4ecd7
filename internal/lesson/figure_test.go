package lesson

import (
	"strings"
	"testing"
)

// TestFigureMark: a lesson's chart says in its title what its ✗ means:
// flawed by design unless the figure names another mark, nothing when no
// bar is marked.
func TestFigureMark(t *testing.T) {
	tests := []struct {
		name   string
		f      Figure
		want   string
		absent string
	}{
		{"a flawed strategy", Figure{Title: "Oversold", Unit: "units", Bars: []FigureBar{{Label: "none", Value: 3, Flawed: true}, {Label: "redis", Value: 0}}},
			"Oversold; ✗ = flawed by design", ""},
		{"another mark", Figure{Title: "Lost", Unit: "orders", Mark: "orders lost", Bars: []FigureBar{{Label: "durability none", Value: 2, Flawed: true}}},
			"Lost; ✗ = orders lost", "flawed by design"},
		{"nothing marked", Figure{Title: "Throughput", Unit: "ok/s", Bars: []FigureBar{{Label: "redis", Value: 100}}},
			"Throughput", "✗"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svg := string(svgChart(tt.f))
			if !strings.Contains(svg, tt.want) {
				t.Errorf("chart lacks %q:\n%s", tt.want, svg)
			}
			if tt.absent != "" && strings.Contains(svg, tt.absent) {
				t.Errorf("chart has %q", tt.absent)
			}
		})
	}
}
