package main

import (
	"flag"
	"fmt"
	"strings"
	"time"
)

// Flag helpers shared by the subcommands.
//
// Flag usage strings never contain backquotes: Go's flag package takes a
// backquoted word in a usage string as the flag's value name, so
// "number of `seckill serve` instances" printed as "-instances seckill
// serve". Name commands in 'single quotes' instead (TestFlagUsages).

// onFlagSet, when set (by tests), sees every FlagSet a command creates.
var onFlagSet func(*flag.FlagSet)

// newFlagSet returns the FlagSet of the subcommand "seckill name".
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("seckill "+name, flag.ContinueOnError)
	if onFlagSet != nil {
		onFlagSet(fs)
	}
	return fs
}

// cmdName is the subcommand's name for messages ("bench"; main prefixes
// "seckill: ").
func cmdName(fs *flag.FlagSet) string { return strings.TrimPrefix(fs.Name(), "seckill ") }

// setFlags returns the names of the flags given on the command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// bound is the valid range of a numeric flag given explicitly: min and
// max are ints, int64s or time.Durations like the flag (max nil: no upper
// bound); omit says what leaving the flag out does, for the message.
type bound struct {
	name     string
	min, max any
	omit     string
}

// checkBounds fails with a usage error (exit 2) naming the valid range for
// the first flag given explicitly whose value is out of it: an explicit
// --qty 0 is an error, not the default that leaving --qty out gives.
func checkBounds(fs *flag.FlagSet, bs ...bound) error {
	set := setFlags(fs)
	for _, b := range bs {
		f := fs.Lookup(b.name)
		if f == nil {
			panic("checkBounds: no flag " + b.name) // a programming error
		}
		if !set[b.name] {
			continue
		}
		v := f.Value.(flag.Getter).Get()
		if inRange(v, b.min, b.max) {
			continue
		}
		want := fmt.Sprintf(">= %v", b.min)
		if b.max != nil {
			want = fmt.Sprintf("%v..%v", b.min, b.max)
		}
		msg := fmt.Sprintf("%s: --%s %v: want %s", cmdName(fs), b.name, v, want)
		if b.omit != "" {
			msg += " (leave --" + b.name + " out for " + b.omit + ")"
		}
		return exitError{code: 2, msg: msg}
	}
	return nil
}

// inRange compares v with min and max, all of one of the flag types.
func inRange(v, lo, hi any) bool {
	num := func(x any) int64 {
		switch x := x.(type) {
		case int:
			return int64(x)
		case int64:
			return x
		case time.Duration:
			return int64(x)
		}
		panic(fmt.Sprintf("checkBounds: unsupported type %T", x)) // a programming error
	}
	if num(v) < num(lo) {
		return false
	}
	return hi == nil || num(v) <= num(hi)
}

// aliasFlag is one string flag under two names, e.g. --strategy and
// --strategies: the same meaning either way.
type aliasFlag struct {
	name, alias string
	byName      *string
	byAlias     *string
}

func newAliasFlag(fs *flag.FlagSet, name, alias, def, usage string) aliasFlag {
	a := aliasFlag{name: name, alias: alias, byName: new(string), byAlias: new(string)}
	fs.StringVar(a.byName, name, def, usage+" (also --"+alias+")")
	fs.StringVar(a.byAlias, alias, def, "the same as --"+name)
	return a
}

// get returns the value given under either name (the default when
// neither), or a usage error when both were given with different values.
func (a aliasFlag) get(fs *flag.FlagSet) (string, error) {
	set := setFlags(fs)
	switch {
	case set[a.name] && set[a.alias] && *a.byName != *a.byAlias:
		return "", exitError{code: 2, msg: fmt.Sprintf("%s: --%s %q and --%s %q: they are one flag; give it once", cmdName(fs), a.name, *a.byName, a.alias, *a.byAlias)}
	case set[a.alias]:
		return strings.TrimSpace(*a.byAlias), nil
	}
	return strings.TrimSpace(*a.byName), nil
}

// listFlag is a repeatable string flag (also comma-separated).
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}
