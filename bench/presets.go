package bench

import (
	"fmt"
	"slices"
	"strings"
)

// Preset is a named load from the source articles (docs/sources.md): the
// figures their authors fired with JMeter, so a run can be set beside the
// source's own.
type Preset struct {
	Name string
	// Aliases are older names the preset still answers to.
	Aliases     []string
	Requests    int
	Stock       int
	Concurrency int
	// Source names the article and passage the load comes from.
	Source string
}

// Presets are the sources' loads, by name (--preset).
var Presets = []Preset{
	{Name: "chapter1", Aliases: []string{"seed003"}, Requests: 5000, Stock: 5000, Concurrency: 50,
		Source: "Chapter 1: JMeter, 50 threads × 100 loops (5000 requests) on a stock of 5000; `none` left 4000+ in stock, synchronized cut throughput from 3000+ to 1000+ req/s"},
	{Name: "etcd-article", Aliases: []string{"seed002"}, Requests: 500, Stock: 300, Concurrency: 50,
		Source: "etcd article: JMeter, 500 requests at the same moment on a stock of 300 (the bench's default load)"},
}

// LookupPreset returns the preset called name (or one of its aliases), or
// an error listing them.
func LookupPreset(name string) (Preset, error) {
	i := slices.IndexFunc(Presets, func(p Preset) bool { return p.Name == name || slices.Contains(p.Aliases, name) })
	if i < 0 {
		names := make([]string, len(Presets))
		for k, p := range Presets {
			names[k] = p.Name
		}
		return Preset{}, fmt.Errorf("%w: unknown preset %q; valid: %s (--preset list shows them)", ErrInvalidOptions, name, strings.Join(names, ", "))
	}
	return Presets[i], nil
}
