package main

import (
	"flag"
	"testing"

	"github.com/seckill-lab/seckill/stock"
)

// TestKnobFlagsAgree: every command that sets a strategy (bench,
// strategy) has every knob flag, with the same usage and the same
// default, as -h prints them.
func TestKnobFlagsAgree(t *testing.T) {
	sections, err := helpSections()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*flag.FlagSet{}
	for _, s := range sections {
		byName[s.name] = s.fs
	}
	ref := flag.NewFlagSet("ref", flag.ContinueOnError)
	stock.BindKnobFlags(ref)
	for _, cmd := range []string{"bench", "strategy"} {
		fs := byName[cmd]
		if fs == nil {
			t.Fatalf("no -h of %s", cmd)
		}
		for _, name := range stock.KnobFlags() {
			got, want := fs.Lookup(name), ref.Lookup(name)
			switch {
			case got == nil:
				t.Errorf("seckill %s has no --%s", cmd, name)
			case got.Usage != want.Usage || got.DefValue != want.DefValue:
				t.Errorf("seckill %s --%s: %q (default %s), want %q (default %s)", cmd, name, got.Usage, got.DefValue, want.Usage, want.DefValue)
			}
		}
	}
	if len(stock.KnobFlags()) != 10 {
		t.Errorf("knobs %v: want the 10 of stock.Config", stock.KnobFlags())
	}
	// Every command that declares one knob declares them all.
	for _, s := range sections {
		if s.fs.Lookup("work-delay") == nil {
			continue
		}
		for _, name := range stock.KnobFlags() {
			if s.fs.Lookup(name) == nil {
				t.Errorf("seckill %s sets a strategy but has no --%s", s.name, name)
			}
		}
	}
}
