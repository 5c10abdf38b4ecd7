package seckill

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// docPages lists README.md and every Markdown page under docs/.
func docPages(t *testing.T) []string {
	t.Helper()
	pages := []string{"README.md"}
	err := filepath.WalkDir("docs", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, path)
		}
		return err
	})
	if err != nil {
		t.Fatalf("walk docs: %v", err)
	}
	return pages
}

var (
	// mdLink matches an inline link or image: [text](target) or
	// ![alt](target "title").
	mdLink = regexp.MustCompile(`!?\[([^\]]*)\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// codeSpan matches an inline code span, whose brackets are not links.
	codeSpan = regexp.MustCompile("`[^`\n]*`")
	// heading matches an ATX heading.
	heading = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	// forbidden are what no page may say: paths outside the repository and
	// the project's issue numbers.
	forbidden = []*regexp.Regexp{
		regexp.MustCompile(`\.\./shared`),
		regexp.MustCompile(`shared/STRATEGIES`),
		regexp.MustCompile(`(?i)\bissue\s+#?\d+`),
	}
)

// proseLines returns a page's lines with fenced code blocks blanked, so
// that a `#` comment in a code block is not a heading and a `[x](y)` in
// one is not a link. Line numbers stay those of the page.
func proseLines(text string) []string {
	lines := strings.Split(text, "\n")
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			lines[i] = ""
			continue
		}
		if fenced {
			lines[i] = ""
		}
	}
	return lines
}

// headingText is a heading's text as GitHub renders it: links by their
// text, without code ticks or emphasis stars.
func headingText(h string) string {
	h = mdLink.ReplaceAllString(h, "$1")
	return strings.NewReplacer("`", "", "*", "").Replace(h)
}

// slug is GitHub's anchor for a heading's text: lower-case, punctuation
// dropped except '-' and '_', each space a '-'; letters of every script
// (CJK too) and digits kept.
func slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(headingText(text)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of a page's headings; a repeated slug gets
// -1, -2, ... as on GitHub.
func anchors(text string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range proseLines(text) {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

func TestSlug(t *testing.T) {
	tests := []struct{ heading, want string }{
		{"The stock service", "the-stock-service"},
		{"Failure scenarios (`seckill scenario`)", "failure-scenarios-seckill-scenario"},
		{"The lock library (`lockimpl/`)", "the-lock-library-lockimpl"},
		{"Q&A", "qa"},
		{"Chapter 1", "chapter-1"},
		{"etcd article", "etcd-article"},
		{"Exercises: write the lock yourself, `seckill grade` scores it", "exercises-write-the-lock-yourself-seckill-grade-scores-it"},
		{"seckill bench: throughput by network round trip, 2026-11-26 22:25:43 UTC", "seckill-bench-throughput-by-network-round-trip-2026-11-26-222543-utc"},
		{"snake_case and kebab-case", "snake_case-and-kebab-case"},
		{"**Bold** words", "bold-words"},
		{"[A link](x.md) in it", "a-link-in-it"},
		{"实测用时", "实测用时"},
		{"前一天", "前一天"},
		{"Redis SETNX：能用但空转", "redis-setnx能用但空转"},
	}
	for _, tc := range tests {
		if got := slug(tc.heading); got != tc.want {
			t.Errorf("slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

func TestAnchorsRepeat(t *testing.T) {
	got := anchors("# A\n\n```\n# not a heading\n```\n## A\n### B\n## A\n")
	for _, want := range []string{"a", "a-1", "a-2", "b"} {
		if !got[want] {
			t.Errorf("anchors lack %q: %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a # line in a code block counted as a heading")
	}
}

// TestDocLinks: every relative link and image in README.md and docs/
// resolves to a file of the repository, and every #anchor to a heading of
// its page; no page points outside the repository or names an issue.
func TestDocLinks(t *testing.T) {
	texts := map[string]string{}
	read := func(path string) (string, error) {
		if s, ok := texts[path]; ok {
			return s, nil
		}
		b, err := os.ReadFile(path)
		texts[path] = string(b)
		return string(b), err
	}
	links := 0
	for _, page := range docPages(t) {
		text, err := read(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(text, "\n") {
			for _, re := range forbidden {
				if m := re.FindString(l); m != "" {
					t.Errorf("%s:%d says %q: nothing may point outside the repository or name an issue", page, i+1, m)
				}
			}
		}
		for i, l := range proseLines(text) {
			l = codeSpan.ReplaceAllStringFunc(l, func(s string) string { return strings.Repeat(" ", len(s)) })
			for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
				target := m[2]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				where := page + ":" + strconv.Itoa(i+1) + ": " + m[0]
				path, anchor, _ := strings.Cut(target, "#")
				file := page
				if path != "" {
					file = filepath.Join(filepath.Dir(page), path)
					if _, err := os.Stat(file); err != nil {
						t.Errorf("%s: %s does not exist", where, file)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(file, ".md") {
					t.Errorf("%s: an anchor into %s, which is not a Markdown page", where, file)
					continue
				}
				s, err := read(file)
				if err != nil {
					t.Errorf("%s: %v", where, err)
					continue
				}
				if !anchors(s)[anchor] {
					t.Errorf("%s: %s has no heading #%s", where, file, anchor)
				}
			}
		}
	}
	if links == 0 {
		t.Fatal("no relative link found: the parser is broken")
	}
}

// TestHandoutChineseTerms: the Chinese handout keeps one word per term (its
// glossary, 术语): the source articles are 参考文章, an unprotected run is
// 无保护, the conformance suite is 接口一致性测试.
func TestHandoutChineseTerms(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("docs", "workshop", "zh.md"))
	if err != nil {
		t.Fatal(err)
	}
	zh := string(b)
	tests := []struct {
		name string
		bad  *regexp.Regexp
		use  string
	}{
		{"种子", regexp.MustCompile(`种子`), "参考文章 (the sources) or 随机数起点 (--seed)"},
		{"不保护", regexp.MustCompile(`不保护`), "无保护"},
		{"一致性测试 without 接口", regexp.MustCompile(`(^|[^口])一致性测试`), "接口一致性测试"},
		{"实测的课时", regexp.MustCompile(`实测的课时`), "实测用时"},
		{"比速度的课", regexp.MustCompile(`比速度的课`), "测吞吐量的课"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, line := range strings.Split(zh, "\n") {
				if tt.bad.MatchString(line) {
					t.Errorf("zh.md:%d uses %s: write %s\n%s", i+1, tt.name, tt.use, line)
				}
			}
		})
	}
	for _, term := range []string{"参考文章", "无保护", "接口一致性测试", "实测用时", "初始库存"} {
		if !strings.Contains(zh, "| "+term+" |") {
			t.Errorf("zh.md's glossary (术语) has no row for %s", term)
		}
	}
}

// TestGeneratedBlocks: every block a script writes (`scripts/readme-block.sh
// NAME FILE`) is held by exactly one page, once, with its END after its
// BEGIN; and every block a page holds has a script that writes it, so no
// measured figure is left for someone to retype.
func TestGeneratedBlocks(t *testing.T) {
	written := map[string]string{} // block -> script
	scripts, err := filepath.Glob(filepath.Join("scripts", "*.sh"))
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile(`(?m)^\s*scripts/readme-block\.sh ([a-z0-9-]+) `)
	for _, s := range scripts {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(b), -1) {
			written[m[1]] = s
		}
	}
	if len(written) == 0 {
		t.Fatal("no script calls scripts/readme-block.sh")
	}
	// Blocks whose names a script computes: scripts/handout.py's
	// workshop-NAME (en.md) and workshop-zh-NAME (zh.md), written through
	// readme.sh's handout part (TestHandoutFiguresGenerated lists them).
	computed := map[string]string{"workshop-": "scripts/handout.py"}
	writer := func(name string) bool {
		if _, ok := written[name]; ok {
			return true
		}
		for prefix := range computed {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		}
		return false
	}
	held := map[string][]string{} // block -> pages
	begin := regexp.MustCompile(`(?m)^<!-- BEGIN generated:([a-z0-9-]+) -->$`)
	for _, page := range docPages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, m := range begin.FindAllStringSubmatchIndex(text, -1) {
			name := text[m[2]:m[3]]
			held[name] = append(held[name], page)
			if !strings.Contains(text[m[1]:], "\n<!-- END generated:"+name+" -->") {
				t.Errorf("%s: block %s has no END after its BEGIN", page, name)
			}
			if !writer(name) {
				t.Errorf("%s: block %s is written by no script under scripts/ (readme-block.sh %s FILE)", page, name, name)
			}
		}
	}
	for name, script := range written {
		if n := len(held[name]); n != 1 {
			t.Errorf("%s writes block %s, which %d pages hold (%v): want one", script, name, n, held[name])
		}
	}
}

// handoutLessons are the lessons of the handout's plan, each with its
// generated block of figures (scripts/readme.sh, part handout).
var handoutLessons = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 27, 28}

var (
	// generatedBlock matches a generated block and its name.
	generatedBlock = regexp.MustCompile(`(?s)<!-- BEGIN generated:([a-z0-9-]+) -->\n(.*?)<!-- END generated:([a-z0-9-]+) -->`)
	// lessonRef matches a reference to lessons or steps by number, which is
	// not a figure.
	lessonRef = regexp.MustCompile(`(?i)\b(lessons?|steps?)\s+\d+(\s*(–|,|and)\s*\d+)*|第\s*\d+(\s*(到|、|–)\s*\d+)*\s*(课|步)`)
	// handTypedFigure matches what a measured figure looks like: a range,
	// a decimal, a number of two digits or more, a number with a unit.
	handTypedFigure = regexp.MustCompile(`\d+(\.\d+)?\s*[–-]\s*\d|\d\.\d|\d{2,}|\d\s*(×|%|ok/s|req/s|ms\b|MiB|GiB|毫秒|秒|件|单|次|倍)`)
)

// TestHandoutFiguresGenerated: the workshop handout (en.md, zh.md) types
// no expected figure by hand. Each lesson of its plan, the measured times
// and each exercise's starter and answer key have a generated block in
// both languages (workshop-NAME in en.md, workshop-zh-NAME in zh.md,
// written by `make readme`'s handout part from real runs) that holds
// figures, and no "Expect" line outside the blocks holds a figure.
func TestHandoutFiguresGenerated(t *testing.T) {
	want := []string{"times"}
	for _, n := range handoutLessons {
		want = append(want, "lesson-"+strconv.Itoa(n))
	}
	for _, ex := range []string{"redislock", "watchdog", "fencing"} {
		want = append(want, ex+"-starter", ex+"-key")
	}
	tests := []struct {
		page, prefix, expect string
	}{
		{"en.md", "workshop-", "Expect:"},
		{"zh.md", "workshop-zh-", "应该看到："},
	}
	for _, tt := range tests {
		t.Run(tt.page, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("docs", "workshop", tt.page))
			if err != nil {
				t.Fatal(err)
			}
			text := string(b)
			got := map[string]string{}
			for _, m := range generatedBlock.FindAllStringSubmatch(text, -1) {
				if m[1] != m[3] {
					t.Errorf("%s: block %s ends as %s", tt.page, m[1], m[3])
				}
				if !strings.HasPrefix(m[1], tt.prefix) || (tt.prefix == "workshop-" && strings.HasPrefix(m[1], "workshop-zh-")) {
					t.Errorf("%s: block %s: this page's blocks are named %sNAME (a name is unique across pages: scripts/readme-block.sh)", tt.page, m[1], tt.prefix)
				}
				if _, dup := got[m[1]]; dup {
					t.Errorf("%s: block %s twice", tt.page, m[1])
				}
				got[m[1]] = m[2]
			}
			for _, name := range want {
				body, ok := got[tt.prefix+name]
				switch {
				case !ok:
					t.Errorf("%s has no block %s%s: add it where its figures belong, then ONLY=handout make readme", tt.page, tt.prefix, name)
				case !regexp.MustCompile(`\d`).MatchString(body):
					t.Errorf("%s: block %s%s holds no figure: ONLY=handout make readme fills it", tt.page, tt.prefix, name)
				}
			}
			outside := generatedBlock.ReplaceAllString(text, "")
			for i, item := range bulletsWith(proseLines(outside), tt.expect) {
				s := codeSpan.ReplaceAllString(item, "")
				s = lessonRef.ReplaceAllString(s, "")
				if m := handTypedFigure.FindString(s); m != "" {
					t.Errorf("%s: expect item %d has the hand-typed figure %q: figures go in a generated block\n%s", tt.page, i+1, m, item)
				}
			}
		})
	}
}

// bulletsWith returns the list items (a "- " line and its indented
// continuation lines, joined) that contain word.
func bulletsWith(lines []string, word string) []string {
	var out []string
	item := ""
	flush := func() {
		if strings.Contains(item, word) {
			out = append(out, item)
		}
		item = ""
	}
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "- "):
			flush()
			item = l
		case item != "" && strings.HasPrefix(l, "  "):
			item += " " + strings.TrimSpace(l)
		default:
			flush()
		}
	}
	flush()
	return out
}
