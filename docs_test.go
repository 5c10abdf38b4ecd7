package seckill

import (
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/seckill-lab/seckill/internal/testenv"
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
	// The cli block is docs/cli.md's flag lists, written by
	// `go generate ./cmd/seckill` (TestCLIDocCommitted keeps it current).
	computed := map[string]string{"workshop-": "scripts/handout.py", "cli": "go generate ./cmd/seckill"}
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

// outsideGenerated returns a page's lines with every generated region
// blanked, its BEGIN and END lines included: the blocks a script writes
// (<!-- BEGIN generated:NAME --> to <!-- END generated:NAME -->) and the
// strategy table `seckill strategies --markdown` writes (<!--
// strategies:begin ... --> to <!-- strategies:end -->). Hand-written text
// is what is left; line numbers stay those of the page.
func outsideGenerated(text string) []string {
	lines := strings.Split(text, "\n")
	for i, g := range generatedMask(lines) {
		if g {
			lines[i] = ""
		}
	}
	return lines
}

// generatedMask reports, for each line, whether it belongs to a generated
// region (outsideGenerated's), its BEGIN and END lines included.
func generatedMask(lines []string) []bool {
	mask := make([]bool, len(lines))
	end := ""
	for i, l := range lines {
		switch {
		case end == "" && strings.HasPrefix(l, "<!-- BEGIN generated:") && strings.HasSuffix(l, " -->"):
			end = "<!-- END generated:" + strings.TrimPrefix(l, "<!-- BEGIN generated:")
		case end == "" && strings.HasPrefix(l, "<!-- strategies:begin"):
			end = "<!-- strategies:end -->"
		case end != "" && l == end:
			end = ""
		case end == "":
			continue
		}
		mask[i] = true
	}
	return mask
}

// docProblem is one thing a check found on a page: its line (1-based), what
// it found and why that is a problem.
type docProblem struct {
	line       int
	found, why string
}

func (p docProblem) String() string { return strconv.Itoa(p.line) + ": " + p.found + ": " + p.why }

// pageProblems reads every page of docPages except those skip names and
// reports what check finds on each.
func pageProblems(t *testing.T, check func(page, text string) []docProblem, skip func(page string) bool) {
	t.Helper()
	for _, page := range docPages(t) {
		if skip != nil && skip(page) {
			continue
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range check(page, string(b)) {
			t.Errorf("%s:%s", page, p)
		}
	}
}

// fencedLines walks the lines outside generated regions and calls f with
// each line and the language of the fenced code block it is in ("" for
// prose; "text" for a fence without a language). Fence lines are skipped.
func fencedLines(text string, f func(i int, line, lang string)) {
	lang := ""
	for i, l := range outsideGenerated(text) {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "```") {
			if lang == "" {
				lang = strings.TrimSpace(strings.TrimPrefix(t, "```"))
				if lang == "" {
					lang = "text"
				}
			} else {
				lang = ""
			}
			continue
		}
		f(i, l, lang)
	}
}

// figureAllowed are the only figures with a unit a hand-written line may
// state: constants the product defines, each where it says. A figure is
// compared without its spaces ("10 s" is "10s"). At most 25; each must be
// used by some page (TestDocFigures), so the list holds no stale entry.
// An entry passes its figure wherever it stands, so a measurement that
// happens to equal a constant passes too: keep the entries few.
var figureAllowed = []string{
	"10s",      // stock.DefaultLockTTL; app.Timeouts.Read's default (internal/app); nginx's client timeouts (nginx.conf); consullock.MinTTL; bench.LinearizabilityTimeout
	"5s",       // stock.DefaultLockWait; app.Timeouts.ReadHeader's default (internal/app)
	"1s",       // lock_wait + 1 s, a stalled backend's bound (internal/app TestStalledBackendAnswersWithinLockWait); fail_timeout=1s (internal/stack nginx.go upstreamServerParams)
	"2s",       // orderstream.ClaimIdle (stock/orderstream); locktest.DefaultExpirySlack
	"3s",       // grade.LivenessSlack (internal/grade)
	"15s",      // consullock.DefaultLockDelay, Consul's own default
	"20ms",     // config.DefaultStreamGather, seckill serve --stream-gather (internal/config)
	"35s",      // proxy_read_timeout 35s (nginx.conf)
	"40s",      // proxy_next_upstream_timeout 40s (nginx.conf)
	"30s",      // bench.DefaultRequestTimeout, the bench's clients (bench/options.go)
	"4KiB",     // api.Options.MaxBody's default (internal/api)
	"1280×720", // the projector the dashboard is laid out for (internal/dashboard browser_test.go)
	"18px",     // the dashboard's smallest text (internal/dashboard browser_test.go checkLayout)
	"5×",       // bench.MinCeilingRatio: "limited by lab" below it (bench/options.go)
	"85%",      // bench's busyBound: "limited by lab" when the CPUs are this busy (bench/limit.go)
	"20%",      // the soak's leak bound beside soak.LeakFloor (internal/soak)
	"16MiB",    // soak.LeakFloor["rss_mib"] (internal/soak)
	"64KiB",    // the access log's buffer=64k (internal/stack nginx.go accessLogBuffer)
	"0.2ms",    // the --rtt profile zone (internal/netfault Profiles)
	"2ms",      // the --rtt profile cross-zone (internal/netfault Profiles), lesson 26's round trip (internal/lesson ranking.go)
	"30ms",     // the --rtt profile region (internal/netfault Profiles)
}

var (
	// unitFigure is what a measured figure looks like: a number or a range
	// with a unit of time, rate, share, size or ratio ("3.1×", "2x", "1.8
	// times"). Flag values and commands are masked before it is applied.
	unitFigure = regexp.MustCompile(`(?:^|[^\p{L}\p{N}_.:/@=+-])(\d+(?:[.,]\d+)?(?:\s*[–-]\s*\d+(?:\.\d+)?)?\s?(?:ms|µs|us|ns|s|min|%|[KMG]i?B|kB|[a-z]*/s|×\d*|x|times|px))(?:$|[^\p{L}\p{N}_/])`)
	// runsFigure is a count of runs: "3 of 5 runs", "10/10".
	runsFigure = regexp.MustCompile(`\b\d+\s+(?:of|in)\s+\d+\s+(?:runs?|repeats?|benches|rounds)\b|(?:^|[^\w/.-])\d{1,3}/\d{1,3}(?:$|[^\w/.-])`)
	// decimalRange is a measured-looking range of decimals ("10.6–10.9").
	decimalRange = regexp.MustCompile(`\b\d+\.\d+\s*–\s*\d+(?:\.\d+)?\b`)
	// commandSpan is a code span that is a command or a flag: its numbers
	// are arguments, not figures.
	commandSpan = regexp.MustCompile("^(?:bin/seckill|seckill|make|go|scripts/|kubectl|docker|curl|helm|kind|for |export |-|[A-Z_]+=)")
	// flagValue is a flag and its value in a line of a command, or a
	// fault's spec (`pause:inst-2@5s+5s`).
	flagValue = regexp.MustCompile(`--?[a-zA-Z][\w-]*(?:[ =]\S+)?|\b[a-z]+(?:=\S+)?:[\w/.-]+@\S+`)
)

// figureProblems returns the figures a page types by hand: outside its
// generated regions, a number with a unit (ms, s, µs, ok/s, req/s, /s, %,
// MiB..., ×/x ratios, "N times"), a count of runs ("3 of 5 runs",
// "10/10") or a range of decimals ("10.6–10.9"), in prose, tables and code
// spans alike. Not figures: what a command says, i.e. a code span that
// starts with a command or a flag (`bin/seckill bench --requests 150`),
// any flag and its value, and in a fenced block of commands (sh, bash,
// console) everything but its # comments; the constants of figureAllowed.
// A fenced block in any other language (a diagram, yaml) is read as prose.
// docs/sources.md quotes the sources' own figures and is not read.
func figureProblems(page, text string) []docProblem {
	var out []docProblem
	allowed := map[string]bool{}
	for _, a := range figureAllowed {
		allowed[a] = true
	}
	fencedLines(text, func(i int, l, lang string) {
		switch lang {
		case "":
			l = codeSpan.ReplaceAllStringFunc(l, func(s string) string {
				if commandSpan.MatchString(strings.Trim(s, "`")) {
					return " "
				}
				return s
			})
			l = mdLink.ReplaceAllString(l, "$1")
		case "sh", "bash", "console", "shell":
			c := strings.Index(l, " #")
			if strings.HasPrefix(strings.TrimSpace(l), "#") {
				c = 0
			}
			if c < 0 {
				return
			}
			l = l[c:]
		}
		l = flagValue.ReplaceAllString(l, " ")
		const why = "a figure typed by hand: say where the generated block that holds it is"
		var found []string
		for _, m := range unitFigure.FindAllStringSubmatch(l, -1) {
			if !allowed[strings.Join(strings.Fields(m[1]), "")] {
				found = append(found, m[1])
				out = append(out, docProblem{i + 1, m[1], why})
			}
		}
	next:
		for _, m := range append(runsFigure.FindAllString(l, -1), decimalRange.FindAllString(l, -1)...) {
			m = strings.TrimSpace(m)
			for _, f := range found {
				if strings.Contains(f, m) {
					continue next // "0.3–3.5" of "0.3–3.5 ms", reported once
				}
			}
			out = append(out, docProblem{i + 1, m, why})
		}
	})
	return out
}

// usedAllowed returns the entries of figureAllowed that text states.
func usedAllowed(text string) map[string]bool {
	used := map[string]bool{}
	fencedLines(text, func(_ int, l, _ string) {
		for _, m := range unitFigure.FindAllStringSubmatch(l, -1) {
			used[strings.Join(strings.Fields(m[1]), "")] = true
		}
	})
	return used
}

// skipFigurePages are the pages figureProblems does not read: the workshop
// handouts, whose expected figures TestHandoutFiguresGenerated keeps in
// their generated blocks, and docs/sources.md, which quotes the sources'
// figures as theirs.
func skipFigurePages(page string) bool {
	return strings.HasPrefix(page, filepath.Join("docs", "workshop")+string(filepath.Separator)) || page == filepath.Join("docs", "sources.md")
}

// TestDocFigures: README.md and docs/ type no measured figure outside
// their generated blocks (figureProblems says what counts); a figure is
// in a block a script writes from a run, and the prose points at the
// block. The allowed constants are at most 25 and each is used.
func TestDocFigures(t *testing.T) {
	pageProblems(t, figureProblems, skipFigurePages)
	if len(figureAllowed) > 25 {
		t.Errorf("figureAllowed has %d entries: at most 25", len(figureAllowed))
	}
	used := map[string]bool{}
	for _, page := range docPages(t) {
		if skipFigurePages(page) {
			continue
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for a := range usedAllowed(string(b)) {
			used[a] = true
		}
	}
	for _, a := range figureAllowed {
		if !used[a] {
			t.Errorf("figureAllowed lists %q, which no page states: drop it", a)
		}
	}
}

// TestDocFiguresCatches: figureProblems reports a figure typed in prose,
// in a table, in a code span and in a command's comment, and passes a
// generated block, a command's flag values and an allowed constant.
func TestDocFiguresCatches(t *testing.T) {
	bad := []struct{ page, want string }{
		{"etcd passes ZooKeeper: 309 against 206 ok/s.\n", "206 ok/s"},
		{"a ceiling of 1550–2490/s here\n", "1550–2490/s"},
		{"| redis | 0.39 ms |\n", "0.39 ms"},
		{"batched redis sold about 2x as fast\n", "2x"},
		{"redis-stream over sql-atomic: 3.1× after\n", "3.1×"},
		{"it took `9622 against 3185 ok/s`\n", "3185 ok/s"},
		{"oversold in 3 of 3 runs\n", "3 of 3 runs"},
		{"right 20/20 in the grade\n", "20/20"},
		{"the cycle took 10.6–10.9 when idle\n", "10.6–10.9"},
		{"MariaDB grew 0.3 MiB per bench\n", "0.3 MiB"},
		{"the proxy costs about 40% of it\n", "40%"},
		{"1.8 times as fast on 3.7\n", "1.8 times"},
		{"```sh\nbin/seckill up   # ready in 0.8–2.9 s\n```\n", "0.8–2.9 s"},
		{"```\nclient --> nginx: 12.85 ms of CPU\n```\n", "12.85 ms"},
		{"<!-- BEGIN generated:x -->\n1 ms\n<!-- END generated:x -->\nand 5 ms here\n", "5 ms"},
	}
	for _, tc := range bad {
		ps := figureProblems("x.md", tc.page)
		found := false
		for _, p := range ps {
			found = found || p.found == tc.want
		}
		if !found {
			t.Errorf("figureProblems(%q) = %v: want %q reported", tc.page, ps, tc.want)
		}
	}
	good := []string{
		"<!-- BEGIN generated:demo -->\nnone 3517 ok/s, 12.2x\n<!-- END generated:demo -->\n",
		"<!-- strategies:begin (x) -->\n| consul | lock-delay 19 s |\n<!-- strategies:end -->\n",
		"`bin/seckill bench --requests 150 --rtt 2ms` and `--fault pause:inst-2@5s+5s`\n",
		"```sh\nbin/seckill fault pause inst-2 --for 5s   # SIGSTOP, then SIGCONT\n```\n",
		"the lock-delay (15 s by default) and `--stream-gather` (20 ms)\n",
		"lesson 26, 3 instances, 50 clients, etcd 3.7.3, port 17080\n",
	}
	for _, page := range good {
		if ps := figureProblems("x.md", page); len(ps) > 0 {
			t.Errorf("figureProblems(%q) = %v: want none", page, ps)
		}
	}
}

// historyPhrases are what a sentence about the past says. The pages
// describe what the product does today; what it did before goes to the
// commit messages. "before the" alone is not here: "before the lock is
// released" and "right before COMMIT" describe the present, so only the
// phrases that name a past state are listed ("before the fix", "before
// the hardening"). "now" alone is not here either ("the strategy it runs
// now" is the present): "now" before a verb of change is.
var historyPhrases = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\bused to\b`),
	regexp.MustCompile(`(?i)\bbefore this\b`),
	regexp.MustCompile(`(?i)\bbefore the (?:hardening|fix|fixes|change|changes|rewrite|session)\b`),
	regexp.MustCompile(`(?i)\bbefore this session's\b`),
	regexp.MustCompile(`(?i)\((?:before|was)\b[^)]*\d`), // "(was 180 s)", "(before: 4 → 21)"
	regexp.MustCompile(`(?i)\bno longer\b`),
	regexp.MustCompile(`(?i)\bnow (?:passes|has|have|counts|prices|tries|serves|runs|sells|uses|takes|gives|reads|says|names|checks|keeps|retries|starts|waits|lives|one|is|are)\b`),
	regexp.MustCompile(`(?i)\b(?:is|are|has|have) now \w`), // not "as it is now)"
	regexp.MustCompile(`(?i)\b(?:is|are) gone\b`),
	regexp.MustCompile(`(?i)\b(?:went|fell|rose|dropped) from\b`),
	regexp.MustCompile(`(?i)\ba first version\b`),
	regexp.MustCompile(`(?i)\bmeasured before (?:this|that|the change|the fix)\b`), // not "measured before every round"
	regexp.MustCompile(`(?i)\bthe old (?:behaviou?r|generator|code|version)\b`),
	regexp.MustCompile(`(?i)\bgot there from\b`),
	regexp.MustCompile(`(?i)\bas it stood then\b`),
	regexp.MustCompile(`(?i)\b(?:all )?fixed in\b`),
	regexp.MustCompile(`(?i)\bthat stayed after\b`),
	regexp.MustCompile(`(?i)\bit had (?:predicted|been)\b`),
	regexp.MustCompile(`(?i)\bhad been\b`),
	regexp.MustCompile(`(?i)\bsince 20\d\d-\d\d-\d\d\b`),
}

// historyProblems returns the history phrases of a page's hand-written
// lines (outside generated regions and fenced code blocks).
func historyProblems(_, text string) []docProblem {
	var out []docProblem
	fencedLines(text, func(i int, l, lang string) {
		if lang != "" {
			return
		}
		for _, re := range historyPhrases {
			if m := re.FindString(l); m != "" {
				out = append(out, docProblem{i + 1, m, "history: say what the product does today; the past goes to the commit messages"})
			}
		}
	})
	return out
}

// TestDocPresentTense: README.md and docs/ (the workshop handouts too)
// describe what the product does, in the present; no sentence tells what
// it did before.
func TestDocPresentTense(t *testing.T) {
	pageProblems(t, historyProblems, nil)
}

// TestDocPresentTenseCatches: historyProblems reports each kind of history
// sentence, and passes present-tense sentences that share its words.
func TestDocPresentTenseCatches(t *testing.T) {
	bad := []string{
		"It used to yield in a loop.\n",
		"Before this, every fenced purchase was refused.\n",
		"Before the hardening, the code collapsed.\n",
		"Before the fix, one run gave Consul 38 ok/s.\n",
		"its requests end at 35 s (was 180 s)\n",
		"goroutines 20 → 20 (before: 24 → 109)\n",
		"The lock no longer spins.\n",
		"etcd now passes ZooKeeper.\n",
		"Every bench report now has a cost model.\n",
		"The acquire is now one transaction.\n",
		"The rare handoffs are gone too.\n",
		"requests per purchase went from 7.8 to 5.8\n",
		"A first version slept in ppoll.\n",
		"(measured before this change)\n",
		"Three causes, all fixed in consullock.\n",
		"Every etcd figure is 3.7.3's since 2026-11-28.\n",
	}
	for _, page := range bad {
		if len(historyProblems("x.md", page)) == 0 {
			t.Errorf("historyProblems(%q) found nothing: want it reported", page)
		}
	}
	good := []string{
		"The release runs before the lock is released elsewhere.\n",
		"It rolls back right before COMMIT, before the check.\n",
		"under the strategy it runs now\n",
		"```sh\n# it used to be here\n```\n",
		"<!-- BEGIN generated:soak -->\nThe soak now counts the pool.\n<!-- END generated:soak -->\n",
	}
	for _, page := range good {
		if ps := historyProblems("x.md", page); len(ps) > 0 {
			t.Errorf("historyProblems(%q) = %v: want none", page, ps)
		}
	}
}

// untestedLabel is what a page or a row says of what was checked but
// never run: an install path, a deployment.
const untestedLabel = "validated offline, not run"

// untestedPages are the pages whose subject was validated offline and
// never run: their first paragraph after the title carries the label.
var untestedPages = []string{"docker.md", "kubernetes.md"}

// labelProblems returns where a page fails to label what was never run:
// for docs/docker.md and docs/kubernetes.md, the first paragraph after the
// title; for README.md, the docs map's row of each of those pages; on
// every page, each paragraph (lines between blank lines) that names the
// Fedora or Homebrew install path.
func labelProblems(page, text string) []docProblem {
	labelled := func(s string) bool { return strings.Contains(strings.ToLower(s), untestedLabel) }
	var out []docProblem
	for _, u := range untestedPages {
		if filepath.Base(page) != u || filepath.Dir(page) != "docs" {
			continue
		}
		lines := strings.Split(text, "\n")
		para, start := "", 0
		for i, l := range lines {
			if strings.HasPrefix(l, "# ") || (para == "" && strings.TrimSpace(l) == "") {
				continue
			}
			if strings.TrimSpace(l) == "" {
				break
			}
			if para == "" {
				start = i
			}
			para += " " + l
		}
		if !labelled(para) {
			out = append(out, docProblem{start + 1, strings.TrimSpace(para), "the first paragraph says \"" + untestedLabel + "\" and what was checked"})
		}
	}
	lines := outsideGenerated(text)
	para, start := "", 0
	for i, l := range append(lines, "") {
		if strings.TrimSpace(l) != "" {
			if para == "" {
				start = i
			}
			para += " " + l
			continue
		}
		if (strings.Contains(para, "Fedora") || strings.Contains(para, "Homebrew")) && !labelled(para) {
			out = append(out, docProblem{start + 1, "Fedora/Homebrew", "a paragraph naming the Fedora or Homebrew install path says \"" + untestedLabel + "\""})
		}
		para = ""
	}
	if page != "README.md" {
		return out
	}
	for _, u := range untestedPages {
		found := false
		for i, l := range lines {
			if strings.HasPrefix(l, "| [") && strings.Contains(l, "(docs/"+u+")") {
				found = true
				if !labelled(l) {
					out = append(out, docProblem{i + 1, l, "the docs map's row says \"" + untestedLabel + "\""})
				}
			}
		}
		if !found {
			out = append(out, docProblem{0, u, "the docs map has no row for it"})
		}
	}
	return out
}

// TestDocUntestedLabelled: what was validated offline and never run says
// so where it is described: Docker Compose and Kubernetes at the top of
// their pages and in the README's docs map, the Fedora and Homebrew
// install paths wherever a page names them.
func TestDocUntestedLabelled(t *testing.T) {
	pageProblems(t, labelProblems, nil)
}

// TestDocUntestedLabelledCatches: labelProblems reports each label
// dropped from a page, a docs map row and the Requirements paragraph.
func TestDocUntestedLabelledCatches(t *testing.T) {
	readme := "| [docker.md](docs/docker.md) | Compose: validated offline, not run |\n" +
		"| [kubernetes.md](docs/kubernetes.md) | a cluster: validated offline, not run |\n\n" +
		"On Fedora and Homebrew `make deps` uses dnf or brew: validated offline, not run.\n"
	if ps := labelProblems("README.md", readme); len(ps) > 0 {
		t.Fatalf("labelProblems(README) = %v: want none", ps)
	}
	for _, cut := range []string{"Compose: validated offline, not run", "a cluster: validated offline, not run", "dnf or brew: validated offline, not run"} {
		if ps := labelProblems("README.md", strings.Replace(readme, cut, "x", 1)); len(ps) != 1 {
			t.Errorf("labelProblems(README without %q) = %v: want one problem", cut, ps)
		}
	}
	page := "# On a cluster\n\n**Validated offline, not run.** The tests render the manifests.\n\nMore.\n"
	if ps := labelProblems(filepath.Join("docs", "kubernetes.md"), page); len(ps) > 0 {
		t.Errorf("labelProblems(kubernetes.md) = %v: want none", ps)
	}
	stack := "`up` looks where the Debian, Fedora and Homebrew packages put it.\n"
	if ps := labelProblems(filepath.Join("docs", "stack.md"), stack); len(ps) != 1 {
		t.Errorf("labelProblems(stack.md, Fedora unlabelled) = %v: want one problem", ps)
	}
	if ps := labelProblems(filepath.Join("docs", "stack.md"), strings.Replace(stack, "put it.", "put it (validated offline, not run).", 1)); len(ps) > 0 {
		t.Errorf("labelProblems(stack.md, Fedora labelled) = %v: want none", ps)
	}
	moved := "# On a cluster\n\nThe lab on a cluster.\n\n**Validated offline, not run.**\n"
	if ps := labelProblems(filepath.Join("docs", "kubernetes.md"), moved); len(ps) != 1 {
		t.Errorf("labelProblems(kubernetes.md, label not on top) = %v: want one problem", ps)
	}
}

// readmeWidth is the widest a README.md line may be, in runes.
const readmeWidth = 100

// widthProblems returns the lines of a page wider than readmeWidth runes,
// outside fenced code blocks (commands keep their length) and generated
// regions (their scripts write them).
func widthProblems(_, text string) []docProblem {
	var out []docProblem
	fencedLines(text, func(i int, l, lang string) {
		if n := utf8.RuneCountInString(l); lang == "" && n > readmeWidth {
			out = append(out, docProblem{i + 1, strconv.Itoa(n) + " runes", "wider than " + strconv.Itoa(readmeWidth) + ": rewrap it"})
		}
	})
	return out
}

// TestREADMEWidth: README.md's hand-written lines are at most 100 runes.
func TestREADMEWidth(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range widthProblems("README.md", string(b)) {
		t.Errorf("README.md:%s", p)
	}
}

// TestREADMEWidthCatches: widthProblems counts runes, not bytes, and
// skips code blocks and generated regions.
func TestREADMEWidthCatches(t *testing.T) {
	cjk := strings.Repeat("库", 100) // 300 bytes, 100 runes
	if ps := widthProblems("README.md", cjk+"\n"); len(ps) > 0 {
		t.Errorf("a line of 100 runes: %v", ps)
	}
	if ps := widthProblems("README.md", cjk+"x\n"); len(ps) != 1 {
		t.Errorf("a line of 101 runes: %v, want one problem", ps)
	}
	long := strings.Repeat("x", 120)
	if ps := widthProblems("README.md", "```sh\n"+long+"\n```\n<!-- BEGIN generated:demo -->\n"+long+"\n<!-- END generated:demo -->\n"); len(ps) > 0 {
		t.Errorf("a code block and a generated block: %v, want none", ps)
	}
}

var (
	// pathToken is a path in a code span, a link target or a code block:
	// two or more segments joined by "/".
	pathToken = regexp.MustCompile(`(?:^|[\s(\x60"'=])((?:\.{1,2}/|/)?[\w.@<>{}*…|$-]+(?:/[\w.@<>{}*…|$-]*)+)`)
	// placeholder is a segment that stands for a name: <time>, NAME, DIR,
	// rtt-N, a glob, an ellipsis, a choice (fsync|none), a variable.
	placeholder = regexp.MustCompile(`[<>{}*…|$]|\.\.\.|(?:^|[-_/])(?:[A-Z]{2,}|N)(?:$|[-_./])`)
	// goSelector is a package's identifier after its path: the .Suite of
	// internal/ports.Suite.
	goSelector = regexp.MustCompile(`\.[A-Z]\w*$`)
	// written is what a command writes: a redirection's file, a scratch
	// directory under /tmp given to --dir or --out.
	written = regexp.MustCompile(`>\s*\S+|--(?:dir|out)[ =]/tmp/\S+`)
	// machinePath is an absolute path on one machine, not on a clone.
	machinePath = regexp.MustCompile(`^/(?:work|home|root|Users)/|^/tmp/.`)
)

// trackedSet returns the files `git ls-files` lists and every directory
// above them, each as a slash path relative to the repository's root.
func trackedSet(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("git", "ls-files").Output()
	if err != nil {
		if testenv.InCI() { // CI tests a fresh clone: git must answer
			t.Fatalf("git ls-files: %v", err)
		}
		t.Skipf("git ls-files: %v", err)
	}
	tracked := map[string]bool{}
	for _, f := range strings.Fields(string(out)) {
		for p := f; p != "." && p != ""; p = path.Dir(p) {
			tracked[p] = true
		}
	}
	return tracked
}

// pathProblems returns the paths a page names that a clone does not have,
// outside its generated regions: a relative link whose file git does not
// track; a path in a code span or a code block that starts at a tracked
// top-level directory and names nothing tracked; a run's folder under
// results/ (runs write them, nothing commits them), and an absolute path
// of one machine (/work/..., /home/..., /tmp/...). Paths with a
// placeholder (results/<timestamp>/, deploy/k8s/chaos/NAME/, lockimpl/...)
// name a shape, not a file, and pass; so does a path under a directory
// the repository does not track (bin/seckill, .seckill/env.sh, raw/...),
// which the product writes, and what a command writes: a redirection's
// file (> deploy/k8s/base/admin-token.env), a scratch directory under
// /tmp given to --dir or --out. A Go selector after a package path
// (internal/ports.Suite) names the package.
func pathProblems(page, text string, tracked map[string]bool) []docProblem {
	var out []docProblem
	check := func(i int, p string, link bool) {
		p = strings.TrimRight(p, ".,:;")
		if p == "" || placeholder.MatchString(p) || strings.Contains(p, "://") {
			return
		}
		switch {
		case machinePath.MatchString(p):
			out = append(out, docProblem{i + 1, p, "a path of one machine: a clone has no such file"})
			return
		case strings.HasPrefix(p, "/"):
			return // a system path: /usr/sbin, /dev/shm
		}
		name := path.Clean(strings.TrimSuffix(goSelector.ReplaceAllString(p, ""), "/"))
		if link {
			name = path.Clean(path.Join(path.Dir(filepath.ToSlash(page)), name))
		}
		first, _, _ := strings.Cut(name, "/")
		switch {
		case first == "results" && name != "results":
			out = append(out, docProblem{i + 1, p, "a run's folder: runs write results/, nothing commits it"})
		case link && !tracked[name]:
			out = append(out, docProblem{i + 1, p, "a link to a file git does not track"})
		case !link && tracked[first] && !tracked[name]:
			out = append(out, docProblem{i + 1, p, "no such file or directory in the repository"})
		}
	}
	fencedLines(text, func(i int, l, lang string) {
		l = written.ReplaceAllString(l, " ")
		if lang != "" {
			for _, m := range pathToken.FindAllStringSubmatch(l, -1) {
				check(i, m[1], false)
			}
			return
		}
		spans := codeSpan.FindAllString(l, -1)
		for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(l, ""), -1) {
			if target, _, _ := strings.Cut(m[2], "#"); target != "" {
				check(i, target, true)
			}
		}
		for _, s := range spans {
			for _, m := range pathToken.FindAllStringSubmatch(s, -1) {
				check(i, m[1], false)
			}
		}
	})
	return out
}

// TestDocPaths: README.md and docs/ name no file a clone lacks outside
// their generated blocks (pathProblems says what counts).
func TestDocPaths(t *testing.T) {
	tracked := trackedSet(t)
	pageProblems(t, func(page, text string) []docProblem { return pathProblems(page, text, tracked) }, nil)
}

// TestDocPathsCatches: pathProblems reports a run's folder, an untracked
// file in a link and in a code span, and a machine's path; it passes a
// generated block, placeholders, tracked paths and what the product
// writes.
func TestDocPathsCatches(t *testing.T) {
	tracked := map[string]bool{"docs": true, "docs/bench.md": true, "README.md": true, "internal": true,
		"internal/cluster": true, "internal/cluster/cluster.go": true}
	bad := []struct{ page, want string }{
		{"the report in `results/readme-20261128-220947/course/`\n", "results/readme-20261128-220947/course/"},
		{"see [the run](../results/perf-20261128/report.html)\n", "../results/perf-20261128/report.html"},
		{"see [the page](gone.md)\n", "gone.md"},
		{"rendered by `internal/cluster/render.go`\n", "internal/cluster/render.go"},
		{"`bin/seckill bench --dir /work/cz`\n", "/work/cz"},
		{"the report in `/tmp/cz/report.json`\n", "/tmp/cz/report.json"},
		{"```sh\nseckill soak --out /work/soak-1h\n```\n", "/work/soak-1h"},
	}
	for _, tc := range bad {
		ps := pathProblems("docs/x.md", tc.page, tracked)
		found := false
		for _, p := range ps {
			found = found || p.found == tc.want
		}
		if !found {
			t.Errorf("pathProblems(%q) = %v: want %q reported", tc.page, ps, tc.want)
		}
	}
	good := "<!-- BEGIN generated:demo -->\nreport in `results/readme-20261128-195558/demo/`\n<!-- END generated:demo -->\n" +
		"Reports go to `results/<timestamp>/`, `results/course-…/` and `deploy/k8s/chaos/NAME/fenced`.\n" +
		"[bench](bench.md), [the README](../README.md#the-course), `internal/cluster`, `internal/cluster/cluster.go`.\n" +
		"`bin/seckill`, `.seckill/env.sh`, `raw/NAME.events.jsonl`, `/usr/sbin`, `/tmp`, `inst-2/redis`, ok/s.\n" +
		"`internal/cluster.Render`, under `results/`, `internal/NAME/EXERCISE/lock.go`.\n" +
		"```sh\necho x > internal/token.env\nbin/seckill up --dir /tmp/hs\n```\n"
	if ps := pathProblems("docs/x.md", good, tracked); len(ps) > 0 {
		t.Errorf("pathProblems(good) = %v: want none", ps)
	}
}

// pageLines is the most hand-written lines a page may have: a page a
// reader can finish. Its generated regions do not count (a script writes
// them, and a table of figures is read by its rows); the workshop
// handouts, a class's plan read a lesson at a time, are not held to it.
const pageLines = 250

// lengthProblems reports a page longer than pageLines lines outside its
// generated regions (outsideGenerated's), pointing at its first line past
// the bound. A page's last line ends with a newline, which starts no line.
func lengthProblems(_, text string) []docProblem {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	n := 0
	for i, g := range generatedMask(lines) {
		if g {
			continue
		}
		if n++; n == pageLines+1 {
			return []docProblem{{i + 1, strconv.Itoa(len(lines)) + " lines", "more than " + strconv.Itoa(pageLines) +
				" lines outside generated blocks: split the page by subject, and name the new page in the README's docs map"}}
		}
	}
	return nil
}

// skipLengthPages are the pages lengthProblems does not read: the
// workshop handouts.
func skipLengthPages(page string) bool {
	return strings.HasPrefix(page, filepath.Join("docs", "workshop")+string(filepath.Separator)) && page != filepath.Join("docs", "workshop", "README.md")
}

// TestDocLength: README.md and every page under docs/ but the workshop
// handouts have at most pageLines lines outside their generated blocks.
func TestDocLength(t *testing.T) {
	pageProblems(t, lengthProblems, skipLengthPages)
}

// TestDocLengthCatches: lengthProblems reports a page one line past the
// bound, not one at it, and counts no line of a generated block or the
// strategy table, their markers included.
func TestDocLengthCatches(t *testing.T) {
	page := func(n int) string { return strings.Repeat("text\n", n) }
	if ps := lengthProblems("x.md", page(pageLines)); len(ps) > 0 {
		t.Errorf("a page of %d lines: %v, want none", pageLines, ps)
	}
	if ps := lengthProblems("x.md", page(pageLines+1)); len(ps) != 1 || ps[0].line != pageLines+1 {
		t.Errorf("a page of %d lines: %v, want one problem at line %d", pageLines+1, ps, pageLines+1)
	}
	block := "<!-- BEGIN generated:perf -->\n" + page(300) + "<!-- END generated:perf -->\n" +
		"<!-- strategies:begin (x) -->\n" + page(300) + "<!-- strategies:end -->\n"
	if ps := lengthProblems("x.md", page(pageLines/2)+block+page(pageLines/2)); len(ps) > 0 {
		t.Errorf("%d hand-written lines around two long generated regions: %v, want none", pageLines, ps)
	}
	if ps := lengthProblems("x.md", page(pageLines/2)+block+page(pageLines/2+1)); len(ps) != 1 {
		t.Errorf("%d hand-written lines around two long generated regions: %v, want one problem", pageLines+1, ps)
	}
	unclosed := "<!-- BEGIN generated:perf -->\n" + page(300)
	if ps := lengthProblems("x.md", unclosed); len(ps) > 0 {
		t.Errorf("an unclosed block: %v: TestGeneratedBlocks reports it, not the length", ps)
	}
	if !skipLengthPages(filepath.Join("docs", "workshop", "en.md")) || skipLengthPages(filepath.Join("docs", "performance.md")) || skipLengthPages(filepath.Join("docs", "workshop", "README.md")) {
		t.Error("skipLengthPages: want the handouts skipped, and every other page read")
	}
}

// mapProblems returns the pages under docs/ that the README's docs map (its
// table rows, "| [name](docs/...) | what it holds |") does not name: a
// page directly under docs/ by its own link, a page in a folder
// (docs/workshop/en.md) by its own link or the folder's. A page the map
// does not name is one later work cannot find a figure's place on.
func mapProblems(readme string, pages []string) []docProblem {
	var rows []string
	for _, l := range proseLines(readme) {
		if strings.HasPrefix(l, "| [") {
			rows = append(rows, l)
		}
	}
	named := func(target string) bool {
		for _, r := range rows {
			if strings.Contains(r, "]("+target+")") {
				return true
			}
		}
		return false
	}
	var out []docProblem
	for _, p := range pages {
		p = filepath.ToSlash(p)
		if !strings.HasPrefix(p, "docs/") || named(p) {
			continue
		}
		if dir := path.Dir(p); dir != "docs" && named(dir+"/") {
			continue
		}
		out = append(out, docProblem{0, p, "the README's docs map has no row for it: add one saying what it holds"})
	}
	return out
}

// TestDocMap: every page under docs/ has a row in the README's docs map.
func TestDocMap(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range mapProblems(string(b), docPages(t)) {
		t.Errorf("README.md:%s", p)
	}
}

// TestDocMapCatches: mapProblems reports a page whose row is gone, and
// passes a folder's pages by the folder's row.
func TestDocMapCatches(t *testing.T) {
	readme := "| page | what it holds |\n|---|---|\n" +
		"| [rtt.md](docs/rtt.md) | block `rtt` |\n" +
		"| [workshop/](docs/workshop/) | the handout |\n"
	pages := []string{"README.md", "docs/rtt.md", "docs/workshop/en.md"}
	if ps := mapProblems(readme, pages); len(ps) > 0 {
		t.Errorf("mapProblems(every row) = %v: want none", ps)
	}
	for _, cut := range []string{"| [rtt.md](docs/rtt.md) | block `rtt` |\n", "| [workshop/](docs/workshop/) | the handout |\n"} {
		if ps := mapProblems(strings.Replace(readme, cut, "", 1), pages); len(ps) != 1 {
			t.Errorf("mapProblems(without %q) = %v: want one problem", cut, ps)
		}
	}
	if ps := mapProblems(readme+"```\n| [batching.md](docs/batching.md) | x |\n```\n", append(pages, "docs/batching.md")); len(ps) != 1 {
		t.Errorf("mapProblems(a row in a code block) = %v: want the page reported", ps)
	}
}

// readmeLines is the longest README.md may be, and readmeFirstScreen the
// lines a reader sees first.
const (
	readmeLines       = 300
	readmeFirstScreen = 40
)

// firstScreenProblems returns what README.md's first readmeFirstScreen
// lines lack of what a newcomer needs before any result: the
// requirements with the Go version go.mod asks for (goVersion, "1.26.7"),
// `make demo`, `make test`, how to stop (`make down`), the dashboard's
// picture, and the heading of what the runs found; and any generated
// block that starts there (the results come after). It also reports a
// README longer than readmeLines.
func firstScreenProblems(readme, goVersion string) []docProblem {
	lines := strings.Split(strings.TrimSuffix(readme, "\n"), "\n")
	var out []docProblem
	if len(lines) > readmeLines {
		out = append(out, docProblem{readmeLines + 1, strconv.Itoa(len(lines)) + " lines", "README.md is at most " + strconv.Itoa(readmeLines) + " lines: move detail to a page under docs/"})
	}
	first := lines[:min(len(lines), readmeFirstScreen)]
	screen := strings.Join(first, "\n")
	for _, want := range []struct{ text, why string }{
		{"## Requirements", "the requirements come first"},
		{"Go " + goVersion + " or newer", "the requirements name go.mod's Go version (\"Go " + goVersion + " or newer\")"},
		{"make demo", "how to start the lab"},
		{"make test", "how to run the tests"},
		{"make down", "how to stop the lab"},
		{"](docs/dashboard.png)", "the dashboard's picture"},
		{"## What the runs found", "the heading of what the runs found, before the results"},
	} {
		if !strings.Contains(screen, want.text) {
			out = append(out, docProblem{readmeFirstScreen, want.text, "not in the first " + strconv.Itoa(readmeFirstScreen) + " lines: " + want.why})
		}
	}
	for i, l := range first {
		if strings.HasPrefix(l, "<!-- BEGIN generated:") && !firstScreenBlocks[l] {
			out = append(out, docProblem{i + 1, l, "a generated block on the first screen: the results come after it"})
		}
	}
	return out
}

// firstScreenBlocks are the generated blocks the first screen may hold:
// the conclusion under "What the runs found", a few lines of prose the
// bench writes from the run of the results below. The tables stay below
// the first screen.
var firstScreenBlocks = map[string]bool{"<!-- BEGIN generated:conclusion -->": true}

// goModVersion returns go.mod's go line as it stands ("1.26.7"): the
// oldest Go the module builds with.
func goModVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+(?:\.\d+)?)\s*$`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	return m[1]
}

// TestREADMEFirstScreen: README.md's first screen holds what a newcomer
// needs before the results, and the README stays within readmeLines.
func TestREADMEFirstScreen(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range firstScreenProblems(string(b), goModVersion(t)) {
		t.Errorf("README.md:%s", p)
	}
}

// TestREADMEFirstScreenCatches: firstScreenProblems reports each item
// missing from the first screen, a stale Go version, a generated block on
// the first screen (the conclusion's excepted) and a README past its length.
func TestREADMEFirstScreenCatches(t *testing.T) {
	good := "# x\n\n## Requirements\n\n- Go 1.26 or newer\n\n```sh\nmake demo\nmake test\nmake down\n```\n\n" +
		"![the dashboard](docs/dashboard.png)\n\n## What the runs found\n\n" + strings.Repeat("text\n", 30) +
		"<!-- BEGIN generated:demo -->\nx\n<!-- END generated:demo -->\n"
	if ps := firstScreenProblems(good, "1.26"); len(ps) > 0 {
		t.Fatalf("firstScreenProblems(good) = %v: want none", ps)
	}
	for _, cut := range []string{"## Requirements", "make demo", "make test", "make down", "](docs/dashboard.png)", "## What the runs found"} {
		if ps := firstScreenProblems(strings.Replace(good, cut, "x", 1), "1.26"); len(ps) != 1 {
			t.Errorf("firstScreenProblems(without %q) = %v: want one problem", cut, ps)
		}
	}
	if ps := firstScreenProblems(good, "1.27"); len(ps) != 1 {
		t.Errorf("firstScreenProblems(go.mod at 1.27) = %v: want one problem", ps)
	}
	early := strings.Replace(good, "## What the runs found\n", "## What the runs found\n<!-- BEGIN generated:lessons -->\nx\n<!-- END generated:lessons -->\n", 1)
	if ps := firstScreenProblems(early, "1.26"); len(ps) != 1 {
		t.Errorf("firstScreenProblems(a block on the first screen) = %v: want one problem", ps)
	}
	conclusion := strings.Replace(good, "## What the runs found\n", "## What the runs found\n<!-- BEGIN generated:conclusion -->\nx\n<!-- END generated:conclusion -->\n", 1)
	if ps := firstScreenProblems(conclusion, "1.26"); len(ps) != 0 {
		t.Errorf("firstScreenProblems(the conclusion on the first screen) = %v: want none", ps)
	}
	if ps := firstScreenProblems(good+strings.Repeat("text\n", readmeLines), "1.26"); len(ps) != 1 {
		t.Errorf("firstScreenProblems(a long README) = %v: want one problem", ps)
	}
}

// blockWidth is the widest a line of README.md's generated blocks may be,
// in runes: their scripts wrap header lines and print compact tables.
const blockWidth = 120

// widthChecked are README.md's generated blocks whose lines
// TestREADMEBlockWidth holds to blockWidth: the conclusion, the compact
// demo table and the short course table (scripts/readme.sh wraps their
// headers; the full tables are in docs/bench.md and docs/course.md).
var widthChecked = map[string]bool{"conclusion": true, "demo": true, "lessons": true}

// blockWidthProblems returns the lines of text's generated blocks named in
// checked that are wider than blockWidth runes, fenced tables included.
func blockWidthProblems(text string, checked map[string]bool) []docProblem {
	var out []docProblem
	for _, m := range generatedBlock.FindAllStringSubmatchIndex(text, -1) {
		name := text[m[2]:m[3]]
		if !checked[name] {
			continue
		}
		first := strings.Count(text[:m[4]], "\n") + 1
		for i, l := range strings.Split(text[m[4]:m[5]], "\n") {
			if n := utf8.RuneCountInString(l); n > blockWidth {
				out = append(out, docProblem{first + i, strconv.Itoa(n) + " runes in block " + name,
					"wider than " + strconv.Itoa(blockWidth) + ": its generator must wrap or shorten it"})
			}
		}
	}
	return out
}

// TestREADMEBlockWidth: the lines of README.md's generated blocks in
// widthChecked are at most blockWidth runes, and every block widthChecked
// names is one README.md holds.
func TestREADMEBlockWidth(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for name := range widthChecked {
		if !strings.Contains(text, "\n<!-- BEGIN generated:"+name+" -->\n") {
			t.Errorf("widthChecked names block %s, which README.md does not hold", name)
		}
	}
	for _, p := range blockWidthProblems(text, widthChecked) {
		t.Errorf("README.md:%s", p)
	}
}

// TestREADMEBlockWidthCatches: blockWidthProblems counts runes, reads the
// checked blocks' fenced tables and header lines, and leaves the blocks it
// is not told to check and the text outside blocks alone.
func TestREADMEBlockWidthCatches(t *testing.T) {
	at := strings.Repeat("库", blockWidth) // 360 bytes, 120 runes
	over := at + "x"
	page := "intro\n" + over + "\n" +
		"<!-- BEGIN generated:demo -->\nPrinted by `x`:\n\n```\n" + at + "\n" + over + "\n```\n<!-- END generated:demo -->\n" +
		"<!-- BEGIN generated:lessons -->\n" + over + "\n<!-- END generated:lessons -->\n"
	ps := blockWidthProblems(page, map[string]bool{"demo": true})
	if len(ps) != 1 || ps[0].line != 8 {
		t.Errorf("one line of 121 runes in a checked block's table, at line 8: got %v", ps)
	}
	if ps := blockWidthProblems(page, map[string]bool{"demo": true, "lessons": true}); len(ps) != 2 {
		t.Errorf("two checked blocks, one wide line each: got %v, want 2 problems", ps)
	}
	if ps := blockWidthProblems(page, nil); len(ps) != 0 {
		t.Errorf("no block checked: got %v, want none", ps)
	}
}

// TestDemoCommandSame: make demo runs the bench with the flags of the
// README's demo block (the Makefile's DEMO_FLAGS and scripts/readme.sh's),
// so a newcomer's table reads like the README's.
func TestDemoCommandSame(t *testing.T) {
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	sh, err := os.ReadFile(filepath.Join("scripts", "readme.sh"))
	if err != nil {
		t.Fatal(err)
	}
	mkFlags := regexp.MustCompile(`(?m)^DEMO_FLAGS\s*:=\s*(.+)$`).FindSubmatch(mk)
	shFlags := regexp.MustCompile(`(?m)^DEMO_FLAGS=\((.+)\)$`).FindSubmatch(sh)
	if mkFlags == nil || shFlags == nil {
		t.Fatalf("DEMO_FLAGS: Makefile %q, scripts/readme.sh %q: want both", mkFlags, shFlags)
	}
	if m, s := strings.Fields(string(mkFlags[1])), strings.Fields(string(shFlags[1])); strings.Join(m, " ") != strings.Join(s, " ") {
		t.Errorf("make demo's flags %q differ from the README's demo block's %q", m, s)
	}
	if !regexp.MustCompile(`(?m)^demo:.*\n(?:\t.*\n)*\t\$\(BIN\) bench --dir \$\(DIR\) \$\(DEMO_FLAGS\)$`).Match(mk) {
		t.Error("make demo does not run $(BIN) bench --dir $(DIR) $(DEMO_FLAGS)")
	}
	if !strings.Contains(string(sh), `"$BIN" bench --dir "$DIR" "${DEMO_FLAGS[@]}" --out`) {
		t.Error(`scripts/readme.sh's demo part does not run "$BIN" bench --dir "$DIR" "${DEMO_FLAGS[@]}"`)
	}
}

// runFolder is a run's own folder under results/ (a timestamp in its
// name), and blockMachinePath an absolute path of one machine, anywhere in
// a line.
var (
	runFolder        = regexp.MustCompile(`results/[\w.-]*\d{8}[\w./-]*`)
	blockMachinePath = regexp.MustCompile(`(?:^|[\s(` + "`" + `=])((?:/work|/home|/root|/Users)/[\w./-]+|/tmp/[\w.-][\w./-]*)`)
)

// blockPathProblems reports what a page's generated blocks name that a
// clone has not: a run's folder under results/, or a path of the machine
// that measured them. A block names the command and the date instead.
func blockPathProblems(_, text string) []docProblem {
	var out []docProblem
	lines := strings.Split(text, "\n")
	for i, g := range generatedMask(lines) {
		if !g {
			continue
		}
		if m := runFolder.FindString(lines[i]); m != "" {
			out = append(out, docProblem{i + 1, m, "a generated block names a run's folder: a clone has no results/ (name the command and the date)"})
		}
		if m := blockMachinePath.FindStringSubmatch(lines[i]); m != nil {
			out = append(out, docProblem{i + 1, m[1], "a generated block names a path of the machine that measured it"})
		}
	}
	return out
}

// TestGeneratedBlocksPortable: no generated block of README.md or docs/
// names a run's folder or a path of the measuring machine.
func TestGeneratedBlocksPortable(t *testing.T) {
	pageProblems(t, blockPathProblems, nil)
}

// TestGeneratedBlocksPortableCatches: blockPathProblems reports a run's
// folder and a machine's path inside a block, and passes them outside one
// (pathProblems reads those lines) and a block's placeholders.
func TestGeneratedBlocksPortableCatches(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"<!-- BEGIN generated:x -->\nreport in `results/lab-capacity-20261128-161243/`.\n<!-- END generated:x -->\n", "results/lab-capacity-20261128-161243/"},
		{"<!-- BEGIN generated:x -->\nRepeat: `seckill soak --dir /work/soak-stack --for 1h`\n<!-- END generated:x -->\n", "/work/soak-stack"},
		{"<!-- BEGIN generated:x -->\nthe report in /tmp/cz/report.json\n<!-- END generated:x -->\n", "/tmp/cz/report.json"},
	} {
		ps := blockPathProblems("docs/x.md", tc.text)
		if len(ps) != 1 || ps[0].found != tc.want {
			t.Errorf("blockPathProblems(%q) = %v, want %q reported", tc.text, ps, tc.want)
		}
	}
	good := "report in `results/readme-20261128-220947/`\n<!-- BEGIN generated:x -->\n" +
		"Repeat: `seckill soak --dir DIR --out OUT`, reports under `results/<timestamp>/`, /usr/sbin/nginx, 2 ms/op\n" +
		"<!-- END generated:x -->\n"
	if ps := blockPathProblems("docs/x.md", good); len(ps) > 0 {
		t.Errorf("blockPathProblems(good) = %v, want none", ps)
	}
}
