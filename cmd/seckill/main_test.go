package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/seckill-lab/seckill/stock/catalog"
)

// TestFlagUsages runs every command's -h and checks that no flag takes its
// value name from backquotes in its usage: "number of `seckill serve`
// instances" printed as "-instances seckill serve".
func TestFlagUsages(t *testing.T) {
	var sets []*flag.FlagSet
	onFlagSet = func(fs *flag.FlagSet) {
		fs.SetOutput(io.Discard)
		sets = append(sets, fs)
	}
	t.Cleanup(func() { onFlagSet = nil })
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	// Commands whose subcommands add flags of their own: each one's -h.
	for _, name := range names {
		runs, ok := helpRuns[name]
		if !ok {
			runs = [][]string{{"-h"}}
		}
		for _, args := range runs {
			before := len(sets)
			if err := commands[name].run(context.Background(), args); !errors.Is(err, flag.ErrHelp) {
				t.Errorf("seckill %s %v: err = %v, want flag.ErrHelp", name, args, err)
			}
			if len(sets) == before {
				t.Errorf("seckill %s %v: no FlagSet through newFlagSet", name, args)
			}
		}
	}
	typeNames := []string{"", "value", "string", "int", "uint", "float", "duration"}
	for _, fs := range sets {
		fs.VisitAll(func(f *flag.Flag) {
			if strings.Contains(f.Usage, "`") {
				t.Errorf("%s -%s: usage has a backquote: %q", fs.Name(), f.Name, f.Usage)
			}
			if vn, _ := flag.UnquoteUsage(f); !slices.Contains(typeNames, vn) {
				t.Errorf("%s -%s: value name %q comes from the usage text", fs.Name(), f.Name, vn)
			}
		})
	}
}

// TestRestartFlagsAfterName: `seckill restart inst-1 --dir D` reads the
// flags after the component's name, as lesson, strategy and events do: on
// a directory without a stack it says so, with the command that starts
// one, not its usage.
func TestRestartFlagsAfterName(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	for _, args := range [][]string{{"restart", "inst-1", "--dir", dir}, {"restart", "--dir", dir, "inst-1"}} {
		err := run(context.Background(), args)
		if err == nil || strings.Contains(err.Error(), "usage") || !strings.Contains(err.Error(), "seckill up --dir "+dir) {
			t.Errorf("seckill %s: %v; want the stack not running in %s", strings.Join(args, " "), err, dir)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s was created (%v)", dir, err)
	}
}

// TestUsageErrors: bad flags stop a command with exit 2 and a message
// naming the fix, before anything starts or is sent.
func TestUsageErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run") // never created
	out := t.TempDir()
	// A fleet that does not exist: validation must fail before any request.
	fleet := []string{"--target", "http://127.0.0.1:1", "--instance-urls", "http://127.0.0.1:1", "--out", out, "--calibrate-requests", "-1"}
	tests := []struct {
		name string
		args []string
		want []string // substrings of the message
	}{
		{"up --instances 0", []string{"up", "--dir", dir, "--instances", "0"}, []string{"--instances 0", "want 1..50"}},
		{"up --instances 51", []string{"up", "--dir", dir, "--instances", "51"}, []string{"want 1..50"}},
		{"up --base-port 0", []string{"up", "--dir", dir, "--base-port", "0"}, []string{"--base-port 0", "want 1024.."}},
		{"up unknown strategy", []string{"up", "--dir", dir, "--strategy", "nope"}, []string{"nope", catalog.SQLAtomic}},
		{"up --strategies alias, unknown", []string{"up", "--dir", dir, "--strategies", "nope"}, []string{"nope"}},
		{"up a list", []string{"up", "--dir", dir, "--strategies", catalog.Redis + "," + catalog.Etcd}, []string{"valid names"}},
		{"up both spellings", []string{"up", "--dir", dir, "--strategy", catalog.Redis, "--strategies", catalog.Etcd}, []string{"give it once"}},
		{"lesson --repeat 101", []string{"lesson", "1", "--dir", dir, "--repeat", "101"}, []string{"--repeat 101"}},
		{"lesson --repeat 0", []string{"lesson", "1", "--dir", dir, "--repeat", "0"}, []string{"--repeat 0"}},
		{"dashboard --allow-host with a scheme", []string{"dashboard", "--dir", dir, "--allow-host", "http://projector.lan"}, []string{"--allow-host \"http://projector.lan\"", "without scheme or port"}},
		{"restart a name then an unknown flag", []string{"restart", "inst-1", "--nope"}, []string{"flag provided but not defined: -nope"}},
		{"restart two names", []string{"restart", "--dir", dir, "inst-1", "inst-2"}, []string{"usage: seckill restart"}},
		{"lab new a bad name", []string{"lab", "new", "Bob!", "--dir", dir}, []string{`lab name "Bob!"`, "lowercase letters"}},
		{"lab new no name", []string{"lab", "new", "--dir", dir}, []string{"usage: seckill lab new NAME"}},
		{"lab new an empty name", []string{"lab", "new", "", "--dir", dir}, []string{`a lab needs a name: seckill lab new "$USER"`}},
		{"lab new --instances 0", []string{"lab", "new", "ann", "--dir", dir, "--instances", "0"}, []string{"--instances 0", "want 1..50"}},
		{"lab new --port-min 80", []string{"lab", "new", "ann", "--dir", dir, "--port-min", "80"}, []string{"--port-min 80", "1024..32767"}},
		{"lab new --port-min above --port-max", []string{"lab", "new", "ann", "--dir", dir, "--port-min", "20000", "--port-max", "12000"}, []string{"must be below --port-max"}},
		{"lab new --topology bogus", []string{"lab", "new", "ann", "--dir", dir, "--topology", "bogus"}, []string{`--topology "bogus"`, "single or ha"}},
		{"lab rm two names", []string{"lab", "rm", "ann", "bob"}, []string{"usage: seckill lab rm NAME"}},
		{"lab unknown", []string{"lab", "start"}, []string{`unknown subcommand "start"`}},
		{"soak --for 1s", []string{"soak", "--dir", dir, "--for", "1s", "--out", out}, []string{"--for must be between 5s and 24h"}},
		{"soak --rate -1", []string{"soak", "--dir", dir, "--rate", "-1", "--out", out}, []string{"--rate must be between 1 and 5000"}},
		{"soak an argument", []string{"soak", "--dir", dir, "extra"}, []string{"unexpected argument \"extra\""}},
		{"nemesis --for 1s", []string{"nemesis", "--dir", dir, "--for", "1s", "--out", out}, []string{"--for must be between 10s and 24h"}},
		{"nemesis fencing without tokens", []string{"nemesis", "--dir", dir, "--strategy", catalog.Redlock, "--fencing", "--out", out}, []string{"redlock has no fencing tokens", "drop --fencing"}},
		{"nemesis an argument", []string{"nemesis", "--dir", dir, "extra"}, []string{"unexpected argument \"extra\""}},
		{"bench --qty 0", []string{"bench", "--dir", dir, "--qty", "0"}, []string{"--qty 0", "want >= 1", "leave --qty out"}},
		{"bench --instances 0", []string{"bench", "--dir", dir, "--instances", "0"}, []string{"--instances 0", "want 1..50", "as it is"}},
		{"bench --stock 0", []string{"bench", "--dir", dir, "--stock", "0"}, []string{"--stock 0"}},
		{"bench --requests 0", []string{"bench", "--dir", dir, "--requests", "0"}, []string{"--requests 0"}},
		{"bench --concurrency 0", []string{"bench", "--dir", dir, "--concurrency", "0"}, []string{"--concurrency 0"}},
		{"bench --repeat 0", []string{"bench", "--dir", dir, "--repeat", "0"}, []string{"--repeat 0", "1..100"}},
		{"bench --goods 0", []string{"bench", "--dir", dir, "--goods", "0"}, []string{"--goods 0"}},
		{"bench --lock-ttl 0", []string{"bench", "--dir", dir, "--lock-ttl", "0"}, []string{"--lock-ttl 0s", "100ms..10m0s"}},
		{"bench --lock-wait 0", []string{"bench", "--dir", dir, "--lock-wait", "0"}, []string{"--lock-wait 0s"}},
		{"bench --timeout 0", []string{"bench", "--dir", dir, "--timeout", "0"}, []string{"--timeout 0s"}},
		{"bench --strategy alias, unknown", []string{"bench", "--dir", dir, "--strategy", "nope"}, []string{"unknown strategy \"nope\""}},
		{"bench both spellings", []string{"bench", "--dir", dir, "--strategy", catalog.Redis, "--strategies", catalog.Etcd}, []string{"give it once"}},
		{"bench fencing without tokens", append([]string{"bench", "--strategy", catalog.Redlock, "--fencing"}, fleet...), []string{"fencing needs a lock that supplies tokens"}},
		{"bench no watchdog without one", append([]string{"bench", "--strategies", catalog.Etcd, "--no-watchdog"}, fleet...), []string{"NoWatchdog"}},
		{"up --topology bogus", []string{"up", "--dir", dir, "--topology", "bogus"}, []string{`--topology "bogus"`, "single or ha"}},
		{"scenario run --repeat 0", []string{"scenario", "run", "pause-holder", "--dir", dir, "--repeat", "0"}, []string{"--repeat 0", "1..100"}},
		{"scenario run --repeat -1", []string{"scenario", "run", "pause-holder", "--dir", dir, "--repeat", "-1"}, []string{"--repeat -1"}},
		{"scenario run --repeat 1000", []string{"scenario", "run", "pause-holder", "--dir", dir, "--repeat", "1000"}, []string{"--repeat 1000"}},
		{"scenario chaos without a cluster form", []string{"scenario", "chaos", "etcd-lease"}, []string{"etcd-lease has no cluster form", "slow-db"}},
		{"bench --experiment-duration alone", []string{"bench", "--dir", dir, "--experiment-duration", "4s"}, []string{"--experiment-duration", "--experiment"}},
		{"scenario chaos unknown", []string{"scenario", "chaos", "nope"}, []string{"nope"}},
		{"scenario chaos two names", []string{"scenario", "chaos", "slow-db", "zk-session"}, []string{"unexpected argument \"zk-session\""}},
		{"fault failover bogus", []string{"fault", "--dir", dir, "failover", "bogus"}, []string{"failover takes no TARGET", `"bogus"`}},
		{"fault heal x", []string{"fault", "--dir", dir, "heal", "x"}, []string{"heal takes no TARGET"}},
		{"fault --for -5s", []string{"fault", "--dir", dir, "pause", "redis-5", "--for", "-5s"}, []string{"--for -5s", "want a duration >= 0"}},
		{"fault --delay -1s", []string{"fault", "--dir", dir, "--delay", "-1s", "latency", "redis"}, []string{"--delay -1s"}},
		{"fault --offset -2s", []string{"fault", "--dir", dir, "--offset", "-2s", "clock", "redis-1"}, []string{"--offset -2s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(context.Background(), tt.args)
			var ee exitError
			if !errors.As(err, &ee) || ee.code != 2 {
				t.Fatalf("err = %v, want a usage error (exit 2)", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(ee.msg, w) {
					t.Errorf("message %q lacks %q", ee.msg, w)
				}
			}
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("%s was created", dir)
			}
			if es, _ := os.ReadDir(out); len(es) > 0 {
				t.Errorf("the bench wrote to %s: %v", out, es)
			}
		})
	}
}
