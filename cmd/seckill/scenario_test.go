package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	seckill "github.com/seckill-lab/seckill"
	"github.com/seckill-lab/seckill/internal/scenario"
	"sigs.k8s.io/yaml"
)

// stdoutOf runs `seckill args...` and returns what it printed.
func stdoutOf(t *testing.T, args ...string) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	got := make(chan string)
	go func() { b, _ := io.ReadAll(r); got <- string(b) }()
	err = run(context.Background(), args)
	os.Stdout = old
	w.Close()
	out := <-got
	if err != nil {
		t.Fatalf("seckill %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// TestScenarioChaos: `seckill scenario chaos NAME` prints the experiment
// as deploy/chaos has it, then, as YAML comments (the output still
// parses as the same objects), every command of the scenario's runbook;
// with no name it lists the scenarios with a cluster form.
func TestScenarioChaos(t *testing.T) {
	for _, name := range []string{"slow-db", "pause-holder", "redlock-clock"} {
		t.Run(name, func(t *testing.T) {
			out := stdoutOf(t, "scenario", "chaos", name)
			exp, _ := seckill.ChaosExperiment(name)
			if !strings.HasPrefix(out, string(exp)) {
				t.Fatalf("does not start with deploy/chaos/%s.yaml:\n%s", name, out)
			}
			sc, err := scenario.Find(name)
			if err != nil {
				t.Fatal(err)
			}
			cmds, err := sc.ClusterCommands("lab-1")
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cmds {
				if !strings.Contains(out, "\n#   "+c+"\n") {
					t.Errorf("no %q", c)
				}
			}
			for _, want := range []string{"apply -k deploy/k8s/chaos/" + name + "/unfenced", "apply -f deploy/chaos/" + name + ".yaml", "-c report > ", "delete -k "} {
				if !strings.Contains(out, want) {
					t.Errorf("no %q", want)
				}
			}
			// The comments change nothing that kubectl would apply.
			var a, b any
			last := strings.LastIndex(out, "\n---\n")
			tail, etail := out, string(exp)
			if last >= 0 {
				tail, etail = out[last:], string(exp)[last:]
			}
			if err := yaml.Unmarshal([]byte(tail), &a); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal([]byte(etail), &b); err != nil {
				t.Fatal(err)
			}
			if ya, _ := yaml.Marshal(a); string(ya) != string(must(yaml.Marshal(b))) {
				t.Errorf("the printed objects differ from the experiment's")
			}
		})
	}
	list := stdoutOf(t, "scenario", "chaos")
	if strings.Join(seckill.ChaosExperiments(), "\n")+"\n" != list {
		t.Errorf("list %q", list)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
