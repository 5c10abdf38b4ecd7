package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCLIDocCommitted: docs/cli.md is what the commands' flag sets render
// (run `go generate ./cmd/seckill` after changing a flag).
func TestCLIDocCommitted(t *testing.T) {
	want, err := renderCLIDoc()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatalf("%v: run go generate ./cmd/seckill", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			g, w := "", ""
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("docs/cli.md differs from the commands' flags at line %d:\n got  %q\n want %q\nrun go generate ./cmd/seckill", i+1, g, w)
			}
		}
	}
}

// TestCLIDocEveryFlagOnce: docs/cli.md lists every flag of every command
// once (a subcommand's inherited flags under its command only), and every
// note and default it adds names a flag that exists.
func TestCLIDocEveryFlagOnce(t *testing.T) {
	sections, err := helpSections()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := renderCLIDoc()
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, s := range sections {
		body := sectionOf(string(doc), "## seckill "+s.name+"\n")
		s.fs.VisitAll(func(f *flag.Flag) {
			known[s.name+" -"+f.Name] = true
			entry := "- `--" + f.Name + "`"
			if typ, _ := flag.UnquoteUsage(f); typ != "" {
				entry = "- `--" + f.Name + " " + typ + "`"
			}
			n := strings.Count(body, "\n"+entry)
			top, _, sub := strings.Cut(s.name, " ")
			if sub && n == 0 && strings.Contains(sectionOf(string(doc), "## seckill "+top+"\n"), "\n"+entry) {
				return // the command's own flag, listed there
			}
			if n != 1 {
				t.Errorf("seckill %s --%s: listed %d times in its section, want once", s.name, f.Name, n)
			}
		})
	}
	for _, m := range []map[string]string{flagNotes, docDefaults} {
		for k := range m {
			if !known[k] {
				t.Errorf("%q: no such command flag", k)
			}
		}
	}
}

// sectionOf returns the part of doc from heading to the next "## ".
func sectionOf(doc, heading string) string {
	i := strings.Index(doc, heading)
	if i < 0 {
		return ""
	}
	rest := doc[i+len(heading):]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return "\n" + rest
}

// TestFlagHelpWidth: every line of every command's -h, its usage and
// prose as well as its flags (tabs to 8 columns), fits in maxHelpWidth
// columns.
func TestFlagHelpWidth(t *testing.T) {
	sections, err := helpSections()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sections {
		var b bytes.Buffer
		s.fs.SetOutput(&b)
		s.fs.Usage()
		for _, line := range strings.Split(b.String(), "\n") {
			if w := columns(line); w > maxHelpWidth {
				t.Errorf("seckill %s -h: %d columns, want <= %d (move the rest to flagNotes):\n%s", s.name, w, maxHelpWidth, line)
			}
		}
	}
}

// columns is the width of line on a terminal with tab stops every 8
// columns, one column per rune.
func columns(line string) int {
	w := 0
	for _, r := range line {
		if r == '\t' {
			w += 8 - w%8
			continue
		}
		w++
	}
	return w
}

func TestColumns(t *testing.T) {
	for _, tt := range []struct {
		line string
		want int
	}{
		{"", 0}, {"  -dir string", 13}, {"    \tusage", 13}, {"\t", 8}, {"ab\tc", 9}, {"min–max", utf8.RuneCountInString("min–max")},
	} {
		if got := columns(tt.line); got != tt.want {
			t.Errorf("columns(%q) = %d, want %d", tt.line, got, tt.want)
		}
	}
}

func TestWrapList(t *testing.T) {
	for _, tt := range []struct {
		items []string
		width int
		want  string
	}{
		{nil, 20, "NAME: "},
		{[]string{"a"}, 20, "NAME: a"},
		{[]string{"aaaa", "bbbb", "cccc"}, 17, "NAME: aaaa, bbbb,\n      cccc"},
		{[]string{"aaaa", "bbbb", "cccc"}, 18, "NAME: aaaa, bbbb,\n      cccc"},
		{[]string{"aaaa", "bbbb", "cccc"}, 22, "NAME: aaaa, bbbb, cccc"},
	} {
		if got := wrapList("NAME: ", tt.items, tt.width); got != tt.want {
			t.Errorf("wrapList(%q, %d) = %q, want %q", tt.items, tt.width, got, tt.want)
		}
	}
}
