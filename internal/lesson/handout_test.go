package lesson

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestHandoutSpeedLessons: where the workshop handouts list the speed
// lessons (the ones to run while the class listens, the ones whose verdict
// follows the machine's load), they list the lessons marked Speed, no
// more and no fewer.
func TestHandoutSpeedLessons(t *testing.T) {
	var want []string
	for _, l := range All() {
		if l.Speed {
			want = append(want, strconv.Itoa(l.N))
		}
	}
	for _, tt := range []struct {
		file string
		list *regexp.Regexp
		sep  string
	}{
		{"en.md", regexp.MustCompile(`speed (?:lessons|verdict) \((?:lessons )?([0-9, ]+)\)`), ", "},
		{"zh.md", regexp.MustCompile(`测吞吐量的课（([0-9、]+)）`), "、"},
	} {
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", "workshop", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		found := tt.list.FindAllStringSubmatch(string(b), -1)
		if len(found) < 2 {
			t.Errorf("docs/workshop/%s: %d lists of the speed lessons, want the two (during the class, a speed verdict)", tt.file, len(found))
		}
		for _, m := range found {
			if got := strings.Split(m[1], tt.sep); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("docs/workshop/%s lists the speed lessons as %s, want %s (the lessons marked Speed)", tt.file, m[1], strings.Join(want, tt.sep))
			}
		}
	}
}
