package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/exercises"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// docs/cli.md is every command's flags as the commands declare them: the
// hidden command cli-doc runs each command's -h, collects the FlagSets
// through newFlagSet and writes them out with their defaults and usage
// lines, and flagNotes' longer explanations. TestCLIDocCommitted fails
// when the committed page differs.
//
//go:generate go run . cli-doc -out ../../docs/cli.md

// hidden are commands that usage does not list: tools of the repository
// itself, not of the lab.
var hidden = map[string]command{
	"cli-doc": {"write docs/cli.md, every command's flags (go generate ./cmd/seckill)", runCLIDoc},
}

// helpRuns are the argument lists that print a command's flags, for the
// commands whose subcommands add flags of their own; every other command
// takes {"-h"}.
var helpRuns = map[string][][]string{
	"scenario": {{"run", "-h"}},
	"lab":      {{"-h"}, {"new", "-h"}, {"list", "-h"}, {"rm", "-h"}, {"test-shift", "-h"}},
}

// maxHelpWidth is the widest line a command's -h may print, in columns
// (TestFlagHelpWidth): a flag's usage is one short line; what does not fit
// goes to flagNotes, which docs/cli.md prints under it.
const maxHelpWidth = 100

// docDefaults replace the defaults that depend on the machine, in
// docs/cli.md ("COMMAND -FLAG" as in flagNotes).
var docDefaults = map[string]string{
	"serve -name": "the host name",
}

// flagNotes explain flags further than their one-line usage, in
// docs/cli.md: the key is "COMMAND -FLAG" ("bench -mode", "lab new -for").
var flagNotes = map[string]string{
	"bench -strategies": "correct runs the strategies the catalogue does not mark flawed by design " +
		"(make perf runs them), flawed the ones it does; whether a run's settings leave a strategy safe is the report's " +
		"\"" + bench.ColSafe + "\" column. The names: " + strings.Join(bench.Strategies(), ", ") + ".",
	"bench -instances":   "The stack stays at that size after the bench.",
	"bench -no-watchdog": "The locks that renew: " + strings.Join(bench.Renewing(), ", ") + ".",
	"bench -mode": "purchase: the database transaction (ranks whole purchases). " +
		"lock: a Redis counter on a direct link (ranks the locks alone, as the source articles do; the locks and none run). " +
		"both, with --sweep-rtt: every round trip in each mode.",
	"bench -sweep-rtt": "2 to 10 round trips, on the stack's links: it needs a stack with the proxy (seckill up --rtt loopback). " +
		"It writes rtt-sweep.html with throughput and p50 against the measured round trip, and each point's report in rtt-N/, " +
		"then puts the stack's round trip back.",
	"bench -sweep-batch":   "1 is off; only the strategies that batch run batched. The sweep charts ok/s, p50 and p99 against the batch size.",
	"bench -sweep":         "At most 10 counts; replaces --concurrency. The report adds throughput and p99 by clients and the locks' scaling ratio.",
	"bench -compare-queue": "The locks: " + strings.Join(bench.Queued(), ", ") + "; the run without the queue is named \"NAME (no queue)\".",
	"bench -warmup":        "0: no warm-up.",
	"bench -target": "With --instance-urls (or --instances-dns), a fleet of the lab's service started elsewhere (e.g. a docker compose fleet's nginx), benched through its admin API. " +
		"Without them, any service that keeps the service contract (docs/contract.md), benched through the contract alone, as the row \"service\".",
	"bench -service": "Repeatable. The service is loaded and audited through the contract alone, a row of its own in every round of the same report; " +
		"its row has no cost model, lock cycle or CPU per process, and the report says why.",
	"bench -unprotected":   "Comma-separated. Such a service counts as flawed by design: its oversold is expected, not a finding.",
	"bench -release-pause": "A pause longer than the rest of --lock-ttl makes the DEL delete the next holder's lock.",
	"bench -batch": fmt.Sprintf("At most %d, in one critical section and one transaction. Applies to %s; the other strategies run unbatched.",
		bench.MaxBatch, strings.Join(bench.Batching(), ", ")),
	"bench -per-user-limit": fmt.Sprintf("\"One order per user\" is 1; at most %d. A unique key in MySQL enforces it, "+
		"the strategies flawed by design check then insert, redis-atomic checks in Lua; the run checks %s.", stock.MaxPerUserLimit, bench.InvPerUserLimit),
	"bench -fault":               "E.g. pause:inst-2@5s+5s or kill:redis-1@5s+5s. Needs --rate and the local stack.",
	"bench -repeat":              "The table shows the median and min–max of the rounds.",
	"bench -instances-dns":       "On Kubernetes, instead of --instance-urls.",
	"bench -calibrate":           "The load generator's ceiling: an in-process null server. The database's: the purchase transaction straight at MariaDB, with the local stack or --database-dsn.",
	"bench -preset":              presetNote(),
	"bench -database-dsn":        "With --target there is none unless given.",
	"bench -calibrate-requests":  "The calibration also runs, short, before every bench; a negative value skips it there.",
	"bench -experiment":          "Each run's report records the fault window it observed: the first and last second with errors, timeouts or refused stale holders.",
	"bench -experiment-duration": "0 for a one-shot fault such as a pod kill.",
	"dashboard -allow-host":      "E.g. the projector machine's LAN name; any other Host gets 403.",
	"dashboard -poll":            "Only while a browser watches.",
	"grade -built":               "grade sets it when it re-executes itself.",
	"grade -build-s":             "Counted in the sheet's time.",
	"lesson -repeat":             "A verdict says how often the failure showed.",
	"proxy -echo":                "seckill up measures the links' round trip through it.",
	"lab new -for":               "The exercises: " + strings.Join(exercises.Names(), ", ") + " or " + exercises.ForAll + ". MySQL always runs.",
	"lab new -port-min":          "Its lessons' side stacks take free ports while they run.",
	"lab new -port-max":          "The test suite's ports (26000-31700 and ports.Suite) stay free anyway.",
	"serve -redis-sentinels":     "The single-Redis strategies then follow the master.",
	"serve -db-inflight":         "The lock-free purchases are sql-atomic's and redis-atomic's; the bound is on loopback, scaled by the instance's round trip to MySQL; the other purchases wait in the instance.",
	"serve -stream-gather":       "How long redis-stream's order consumer waits after a short batch before it reads again, so each MySQL transaction writes more orders; 0: no wait, at most 1s.",
	"nemesis -pause-holder":      "Every planned pause of an instance waits (up to 5s) for an instance to read the stock under the lock and pauses that one for the lock's TTL plus 2s; the lock's TTL is then 3s, and each purchase works 3ms between its stock read and its write so the pause lands before the write, and the lease check is off. Without fencing the lock expires under the paused holder and its stale write, once it resumes, undoes the sales made meanwhile; with fencing the write is refused.",
	"serve -stream-replicas":     "How many replicas of the Redis primary must have a redis-stream sale before it is answered (WAIT, up to 1s; fewer: 503 backend_unavailable, resend with the same Idempotency-Key). 0 answers once the primary has it, so a failover can lose the sales its replica had not received; seckill up --topology ha --durability fsync sets 1.",
	"serve -proxy-shift":         "Those addresses are then dialled through the fault proxy.",
	"up -instances":              "On a running stack, up re-scales it to that number (without the flag: back to the default).",
	"up -strategy":               "One of " + strings.Join(catalog.StrategyNames(), ", ") + ".",
	"up -proxy":                  "For seckill fault partition and latency, and --rtt.",
	"up -rtt": "The profiles: loopback (none), zone (0.2ms), cross-zone (2ms), region (30ms). The links: instances to servers, " +
		"and in ha also the members' links to one another, all through the fault proxy (--rtt turns --proxy on). " +
		"seckill status prints the round trip as measured; on a running stack with the proxy, up changes it.",
	"up -durability": "default: Redis without persistence, the others fsync each write. fsync: all fsync, Redis with AOF appendfsync always. " +
		"none: no fsync per write; the data of servers without such a switch on tmpfs. seckill status says it server by server.",
	"up -priority": fmt.Sprintf("servers-first: the instances, nginx and the dashboard run at niceness %d, so a server holding a lock or a row "+
		"is not preempted by them, as on hosts of their own. equal: every process at 0.", stack.YieldNice),
	"up -topology":  "ha: also a Redis primary and replica under 3 Sentinels, and 3-member quorum groups for the other lock servers.",
	"up -base-port": "single: " + stack.PortHelp(stack.TopologySingle) + ". ha: " + stack.PortHelp(stack.TopologyHA) + ".",
	"up -backends":  "mysql always starts. The strategies of the servers left out answer 503 backend_unavailable.",
	"up -dashboard": "Its component is \"dashboard\".",
	"up -etcd":      "The lab's bin/ holds etcd " + server.EtcdVersion + ", which make deps builds; e.g. /usr/bin/etcd runs a distribution's older one, to compare.",
}

// presetNote describes --preset's loads.
func presetNote() string {
	var parts []string
	for _, p := range bench.Presets {
		parts = append(parts, fmt.Sprintf("%s: %d requests on a stock of %d, %d at a time", p.Name, p.Requests, p.Stock, p.Concurrency))
	}
	return strings.Join(parts, "; ") + ". Flags given explicitly win."
}

// helpSection is one command's (or subcommand's) flags as -h prints them.
type helpSection struct {
	name string // "up", "lab new"
	args []string
	fs   *flag.FlagSet
}

// helpSections runs every command's -h (and its subcommands') with the
// FlagSets collected, in the order docs/cli.md lists them.
func helpSections() ([]helpSection, error) {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	if err := exercises.Register(); err != nil {
		return nil, fmt.Errorf("register the workshop exercises: %w", err)
	}
	var out []helpSection
	var last *flag.FlagSet
	onFlagSet = func(fs *flag.FlagSet) {
		fs.SetOutput(&bytes.Buffer{})
		last = fs
	}
	// serve's defaults are its variables': the page shows them unset.
	serveEnv = func(string) string { return "" }
	defer func() { onFlagSet, serveEnv = nil, os.Getenv }()
	for _, name := range names {
		runs, ok := helpRuns[name]
		if !ok {
			runs = [][]string{{"-h"}}
		}
		for _, args := range runs {
			last = nil
			if err := commands[name].run(context.Background(), args); !errors.Is(err, flag.ErrHelp) {
				return nil, fmt.Errorf("seckill %s %s: %v, want the flags' help", name, strings.Join(args, " "), err)
			}
			if last == nil {
				return nil, fmt.Errorf("seckill %s %s: no FlagSet through newFlagSet", name, strings.Join(args, " "))
			}
			sub := strings.Join(append([]string{name}, args[:len(args)-1]...), " ")
			out = append(out, helpSection{name: sub, args: args, fs: last})
		}
	}
	return out, nil
}

// runCLIDoc writes docs/cli.md (--out) or prints it.
func runCLIDoc(_ context.Context, args []string) error {
	fs := newFlagSet("cli-doc")
	out := fs.String("out", "", "file to write (default: standard output)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	b, err := renderCLIDoc()
	if err != nil {
		return err
	}
	if *out == "" {
		_, err = os.Stdout.Write(b)
		return err
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		return fmt.Errorf("cli-doc: %w", err)
	}
	return nil
}

// renderCLIDoc returns docs/cli.md: per command, in name order, its
// summary and each flag with its value type, default, usage line and
// note; a subcommand lists only the flags its command's own -h does not.
func renderCLIDoc() ([]byte, error) {
	sections, err := helpSections()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("# Command-line flags\n\n")
	b.WriteString("Every flag of every `seckill` command, with its default, as `seckill COMMAND -h` prints it.\n")
	b.WriteString("This page is generated from the commands' own flag sets (`go generate ./cmd/seckill`);\n")
	b.WriteString("a test fails when it differs from what they declare. A flag is written `-name` or `--name`,\n")
	b.WriteString("and its value follows it (`--instances 3`) or an `=` (`--dashboard=false`).\n")
	b.WriteString("The defaults and ranges below are the product's constants, written by the generator:\n")
	b.WriteString("the lines between the markers are a generated block.\n\n")
	b.WriteString(cliBlockBegin + "\n")
	b.WriteString("Commands: ")
	for i, s := range sections {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "[%s](#seckill-%s)", s.name, strings.ReplaceAll(s.name, " ", "-"))
	}
	b.WriteString(".\n")
	seen := map[string]map[string]bool{} // command -> flags already listed
	for _, s := range sections {
		top, _, _ := strings.Cut(s.name, " ")
		if seen[top] == nil {
			seen[top] = map[string]bool{}
		}
		fmt.Fprintf(&b, "\n## seckill %s\n\n", s.name)
		if c, ok := commands[s.name]; ok {
			b.WriteString(upperFirst(c.summary) + ".\n")
		}
		var lines []string
		inherited := false
		s.fs.VisitAll(func(f *flag.Flag) {
			if seen[top][f.Name] && s.name != top {
				inherited = true
				return
			}
			seen[top][f.Name] = true
			lines = append(lines, flagDoc(s.name, f))
		})
		if inherited {
			fmt.Fprintf(&b, "\nIt also takes the flags of `seckill %s`.\n", top)
		}
		if len(lines) == 0 {
			b.WriteString("\nNo flags.\n")
			continue
		}
		b.WriteString("\n" + strings.Join(lines, ""))
	}
	b.WriteString(cliBlockEnd + "\n")
	return b.Bytes(), nil
}

// cliBlockBegin and cliBlockEnd mark docs/cli.md's flag lists as a
// generated block, which the doc checks read as the generator's, not as
// typed text.
const (
	cliBlockBegin = "<!-- BEGIN generated:cli -->"
	cliBlockEnd   = "<!-- END generated:cli -->"
)

// flagDoc is one flag's entry in docs/cli.md.
func flagDoc(cmd string, f *flag.Flag) string {
	typ, usage := flag.UnquoteUsage(f)
	head := "`--" + f.Name
	if typ != "" {
		head += " " + typ
	}
	head += "`"
	if def, ok := docDefaults[cmd+" -"+f.Name]; ok {
		head += " (default: " + def + ")"
	} else if def := defaultText(f); def != "" {
		head += " (default `" + def + "`)"
	}
	text := strings.ReplaceAll(usage, "\n", " ")
	if note := flagNotes[cmd+" -"+f.Name]; note != "" {
		text = strings.TrimSuffix(text, ".") + ". " + note
	}
	return "- " + head + ": " + mdText(text) + "\n"
}

// defaultText is a flag's default as -h prints it, "" for a zero value
// (which -h does not print).
func defaultText(f *flag.Flag) string {
	if f.DefValue == "" || f.DefValue == "0" || f.DefValue == "false" || f.DefValue == "0s" || f.DefValue == "[]" {
		return ""
	}
	return f.DefValue
}

// mdText escapes what Markdown would read as HTML in plain text:
// "results/<timestamp>/".
func mdText(s string) string {
	return strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(s)
}

// upperFirst returns s with its first letter upper-case.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// wrapList writes items after prefix, comma-separated, in lines of at most
// width runes; the lines after the first are indented under the first
// item.
func wrapList(prefix string, items []string, width int) string {
	var b strings.Builder
	indent := strings.Repeat(" ", utf8.RuneCountInString(prefix))
	line := prefix
	for i, it := range items {
		if i < len(items)-1 {
			it += ","
		}
		switch {
		case line == prefix:
			line += it
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(it) > width:
			b.WriteString(line + "\n")
			line = indent + it
		default:
			line += " " + it
		}
	}
	b.WriteString(line)
	return b.String()
}
