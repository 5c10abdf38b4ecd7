package fault

import (
	"slices"
	"testing"
)

func TestKinds(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Kinds {
		if seen[k.Name] || k.Does == "" {
			t.Errorf("kind %+v: duplicate or undescribed", k)
		}
		seen[k.Name] = true
		if (k.Param == "") != (k.Default == 0) {
			t.Errorf("%s: a parameter needs its default and a default its parameter", k.Name)
		}
		if got, ok := Lookup(k.Name); !ok || got.Name != k.Name {
			t.Errorf("Lookup(%s) = %+v, %v", k.Name, got, ok)
		}
	}
	if _, ok := Lookup("nope"); ok {
		t.Error("Lookup of an unknown kind succeeded")
	}
	if slices.Contains(Names(true), Heal) || !slices.Contains(Names(false), Heal) || len(Names(false)) != len(Kinds) {
		t.Errorf("Names(true) %v, Names(false) %v", Names(true), Names(false))
	}
}
