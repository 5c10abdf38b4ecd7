package bench

import (
	"fmt"
	"slices"
	"strings"
)

// Preset is a named load from the seeds: the figures their authors fired
// with JMeter, so a run can be set beside the seed's own.
type Preset struct {
	Name        string
	Requests    int
	Stock       int
	Concurrency int
	// Seed names the passage the load comes from.
	Seed string
}

// Presets are the seeds' loads, by name (--preset).
var Presets = []Preset{
	{Name: "seed003", Requests: 5000, Stock: 5000, Concurrency: 50,
		Seed: "003: JMeter, 50 threads × 100 loops (5000 requests) on a stock of 5000; `none` left 4000+ in stock, synchronized cut throughput from 3000+ to 1000+ req/s"},
	{Name: "seed002", Requests: 500, Stock: 300, Concurrency: 50,
		Seed: "002: JMeter, 500 requests at the same moment on a stock of 300 (the bench's default load)"},
}

// LookupPreset returns the preset name, or an error listing them.
func LookupPreset(name string) (Preset, error) {
	i := slices.IndexFunc(Presets, func(p Preset) bool { return p.Name == name })
	if i < 0 {
		names := make([]string, len(Presets))
		for k, p := range Presets {
			names[k] = p.Name
		}
		return Preset{}, fmt.Errorf("%w: unknown preset %q; valid: %s (--preset list shows them)", ErrInvalidOptions, name, strings.Join(names, ", "))
	}
	return Presets[i], nil
}
