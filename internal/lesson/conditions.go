package lesson

import (
	"regexp"
	"slices"
	"strings"
)

// figureRuns is one experiment of a lesson that figures come from: the
// title of its first figure and the conditions of each of its benches
// (bench.Environment.Conditions); none for a scenario's.
type figureRuns struct {
	title string
	conds []string
}

// conditionFields are the parts of a bench's conditions line that can
// differ between the runs of one lesson: the name each starts with, and
// the part as it prints.
var conditionFields = []struct {
	name string
	re   *regexp.Regexp
}{
	{"round trip ", regexp.MustCompile(`round trip (loopback \(no round trip added\)|[0-9.]+ ms measured \([^)]*\))`)},
	{"durability ", regexp.MustCompile(`durability [^,]+`)},
	{"mode ", regexp.MustCompile(`mode [^,]+`)},
	{"", regexp.MustCompile(`\d+ instances?`)},
	{"CPU priority ", regexp.MustCompile(`CPU priority [^,]+`)},
}

// conditionsLine says in one line what a lesson's figures ran under. When
// every bench they come from ran under the same conditions, it is that
// line. Otherwise it is the part they share, then, for each part that
// differs, its values and the figures they hold for (lesson 28: "...;
// durability default for Successful purchases per second and kill -9 of
// inst-2 mid-run; durability default and fsync for Redis killed mid-run").
// Experiments without a bench count for nothing; "" when none has one.
func conditionsLine(exps []figureRuns) string {
	var all []string
	for _, e := range exps {
		all = append(all, e.conds...)
	}
	if all = uniq(all); len(all) <= 1 {
		return strings.Join(all, "")
	}
	shared := all[0]
	var parts []string
	for _, f := range conditionFields {
		re := f.re
		var values []string
		for _, c := range all {
			values = append(values, re.FindString(c))
		}
		if len(uniq(values)) == 1 {
			continue
		}
		shared = strings.Replace(shared, re.FindString(shared), "", 1)
		// Each experiment's values of the part, and the experiments
		// that ran under each set of values.
		var sets []string
		holds := map[string][]string{}
		for _, e := range exps {
			var vs []string
			for _, c := range e.conds {
				vs = append(vs, re.FindString(c))
			}
			if len(vs) == 0 {
				continue
			}
			set := joinValues(f.name, uniq(vs))
			if _, ok := holds[set]; !ok {
				sets = append(sets, set)
			}
			holds[set] = append(holds[set], figureName(e.title))
		}
		for _, set := range sets {
			parts = append(parts, set+" for "+strings.Join(holds[set], " and "))
		}
	}
	shared = strings.Trim(regexp.MustCompile(`(, )+`).ReplaceAllString(strings.TrimSpace(shared), ", "), ", ")
	if len(parts) == 0 {
		// They differ in a part not in conditionFields (the machine):
		// each experiment's own line.
		for _, e := range exps {
			if len(e.conds) > 0 {
				parts = append(parts, figureName(e.title)+": "+strings.Join(uniq(e.conds), " and "))
			}
		}
		return strings.Join(parts, "; ")
	}
	return shared + "; " + strings.Join(parts, "; ")
}

// joinValues writes the values of the part called name once named:
// "durability default and fsync" for "durability default" and
// "durability fsync".
func joinValues(name string, vs []string) string {
	for i, v := range vs {
		vs[i] = strings.TrimPrefix(v, name)
	}
	return name + strings.Join(vs, " and ")
}

// figureName is a figure's title up to its first ": ", quoted: what it
// measures ("kill -9 of inst-2 mid-run").
func figureName(title string) string {
	name, _, _ := strings.Cut(title, ": ")
	return `"` + name + `"`
}

// uniq is vs without repeats, in order.
func uniq(vs []string) []string {
	var out []string
	for _, v := range vs {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
