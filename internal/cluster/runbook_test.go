package cluster

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/scenario"
)

// examplesDir holds the user overlays the docs show (not generated).
var examplesDir = filepath.Join(repoRoot, "deploy", "examples")

// buildRepo runs kustomize on an in-memory copy of the checkout's
// deploy/k8s (files, as committed) and deploy/examples/, with a test admin
// token, at dir (from the module's root); extra files (path from the
// root: content) are added first.
func buildRepo(files map[string][]byte, dir string, extra map[string]string) ([]doc, error) {
	mem := filesys.MakeFsInMemory()
	write := func(p string, b []byte) error { return mem.WriteFile(path.Join("/repo", p), b) }
	for p, b := range files {
		if err := write("deploy/k8s/"+p, b); err != nil {
			return nil, err
		}
	}
	if err := filepath.WalkDir(examplesDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(repoRoot, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return write(filepath.ToSlash(rel), b)
	}); err != nil {
		return nil, fmt.Errorf("read the examples: %w", err)
	}
	if err := write("deploy/k8s/base/admin-token.env", []byte(config.EnvAdminToken+"=test-token\n")); err != nil {
		return nil, err
	}
	for p, c := range extra {
		if err := write(p, []byte(c)); err != nil {
			return nil, err
		}
	}
	return kustomize(mem, path.Join("/repo", dir))
}

// images maps each container of the built workloads
// ("Kind/name/container") to its image.
func images(o *objects) map[string]string {
	out := map[string]string{}
	add := func(kind, name string, pod corev1.PodSpec) {
		for _, c := range append(pod.InitContainers, pod.Containers...) {
			out[kind+"/"+name+"/"+c.Name] = c.Image
		}
	}
	for n, d := range o.deployments {
		add("Deployment", n, d.Spec.Template.Spec)
	}
	for n, s := range o.statefulSets {
		add("StatefulSet", n, s.Spec.Template.Spec)
	}
	for n, j := range o.jobs {
		add("Job", n, j.Spec.Template.Spec)
	}
	return out
}

// exampleImage is the images: entry of deploy/examples/my-bench, which every
// example overlay shares.
func exampleImage(t *testing.T) (entry string, image string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(examplesDir, "my-bench", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Images []struct {
			Name, NewName, NewTag string
		} `json:"images"`
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatal(err)
	}
	if len(k.Images) != 1 || k.Images[0].Name != strings.Split(InstanceImage, ":")[0] {
		t.Fatalf("deploy/examples/my-bench: images %+v, want one entry for %s", k.Images, InstanceImage)
	}
	i := k.Images[0]
	return fmt.Sprintf("images:\n- name: %s\n  newName: %s\n  newTag: %q\n", i.Name, i.NewName, i.NewTag), i.NewName + ":" + i.NewTag
}

// TestExampleOverlays: the user overlays of deploy/examples/ (and the same
// images: entry over every chaos Job) build, decode strictly and give
// every container that runs the lab's image the overlay's image, and
// leave the others as they were.
func TestExampleOverlays(t *testing.T) {
	files, err := committed()
	if err != nil {
		t.Fatal(err)
	}
	entry, want := exampleImage(t)
	cases := []struct{ overlay, base string }{
		{"deploy/examples/my-lab", "deploy/k8s/single"},
		{"deploy/examples/my-bench", "deploy/k8s/bench"},
	}
	for p := range files {
		if d, ok := strings.CutSuffix(p, "/kustomization.yaml"); ok && strings.HasPrefix(d, "chaos/") {
			over := "test-overlays/" + d
			cases = append(cases, struct{ overlay, base string }{over, "deploy/k8s/" + d})
		}
	}
	slices.SortFunc(cases, func(a, b struct{ overlay, base string }) int { return strings.Compare(a.overlay, b.overlay) })
	for _, tc := range cases {
		t.Run(tc.overlay, func(t *testing.T) {
			extra := map[string]string{}
			if strings.HasPrefix(tc.overlay, "test-overlays/") {
				up := strings.Repeat("../", strings.Count(tc.overlay, "/")+1)
				extra[tc.overlay+"/kustomization.yaml"] = "resources:\n- " + up + tc.base + "\n" + entry
			}
			baseDocs, err := buildRepo(files, tc.base, nil)
			if err != nil {
				t.Fatal(err)
			}
			docs, err := buildRepo(files, tc.overlay, extra)
			if err != nil {
				t.Fatal(err)
			}
			bo, err := decodeStrict(baseDocs)
			if err != nil {
				t.Fatal(err)
			}
			o, err := decodeStrict(docs)
			if err != nil {
				t.Fatal(err)
			}
			before, after := images(bo), images(o)
			overridden := 0
			for c, img := range before {
				switch {
				case img == InstanceImage && after[c] != want:
					t.Errorf("%s: image %s, want %s", c, after[c], want)
				case img == InstanceImage:
					overridden++
				case after[c] != img:
					t.Errorf("%s: image %s changed to %s", c, img, after[c])
				}
			}
			if overridden == 0 || len(after) != len(before) {
				t.Errorf("%d containers overridden; %d containers, %d before", overridden, len(after), len(before))
			}
		})
	}
}

// runbook is the fenced block of docs/kubernetes.md after its
// `<!-- runbook` marker, a command a line (comment lines dropped).
func runbook(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "kubernetes.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "<!-- runbook")
	if !ok {
		t.Fatal("docs/kubernetes.md: no <!-- runbook marker")
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatal("docs/kubernetes.md: no ```sh block after the runbook marker")
	}
	block, _, _ = strings.Cut(block, "```")
	var out []string
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if i := strings.Index(l, "  #"); i >= 0 {
			l = strings.TrimSpace(l[:i])
		}
		for _, c := range strings.Split(l, " && ") {
			out = append(out, strings.TrimSpace(c))
		}
	}
	return out
}

// words splits a command line as sh would for the runbook's commands:
// spaces outside quotes separate, quotes group and are dropped.
func words(l string) []string {
	var out []string
	var cur strings.Builder
	var quote rune
	in := false
	for _, r := range l {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ':
			if in || cur.Len() > 0 {
				out = append(out, cur.String())
			}
			cur.Reset()
			in = false
		default:
			cur.WriteRune(r)
		}
	}
	if in || cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// flagOf is the value of flag name in ws ("" when absent).
func flagOf(ws []string, name string) string {
	for i, w := range ws {
		if w == name && i+1 < len(ws) {
			return ws[i+1]
		}
		if v, ok := strings.CutPrefix(w, name+"="); ok {
			return v
		}
	}
	return ""
}

// TestRunbook: every command of docs/kubernetes.md's runbook is one this
// test knows, and what it names exists: each -k path builds with kustomize
// and decodes strictly, each -f file decodes (a Chaos Mesh object against
// its vendored CRD), every Job, container and workload that kubectl logs,
// wait, get or rollout status names is in what the runbook applied before
// it, the image built and loaded is the manifests', the Chaos Mesh chart
// is the vendored CRDs' version on containerd, and the chaos pair is
// `seckill scenario chaos`'s.
func TestRunbook(t *testing.T) {
	rc := newRunbookChecker(t)
	cmds := runbook(t)
	if len(cmds) < 20 {
		t.Fatalf("%d commands in the runbook", len(cmds))
	}
	for _, c := range cmds {
		t.Run(c, func(t *testing.T) {
			for _, p := range rc.check(c) {
				t.Error(p)
			}
		})
	}
	// The overlay the page shows is deploy/examples/my-lab's.
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "kubernetes.md"))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := os.ReadFile(filepath.Join(examplesDir, "my-lab", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, body, _ := strings.Cut(string(ex), "resources:"); !strings.Contains(string(doc), "```yaml\nresources:"+body+"```") {
		t.Errorf("docs/kubernetes.md does not show deploy/examples/my-lab from resources: on")
	}
	for _, c := range rc.pair {
		if !slices.Contains(cmds, c) {
			t.Errorf("the runbook lacks %q of seckill scenario chaos slow-db", c)
		}
	}
}

// TestRunbookCatches: the checker refuses a runbook gone wrong. The real
// runbook runs up to the command before the mutated one (so that what it
// applied is known), and the mutated command must draw the problem named.
func TestRunbookCatches(t *testing.T) {
	cmds := runbook(t)
	first := func(prefix string) int {
		i := slices.IndexFunc(cmds, func(c string) bool { return strings.HasPrefix(c, prefix) })
		if i < 0 {
			t.Fatalf("the runbook has no command starting %q", prefix)
		}
		return i
	}
	tests := []struct {
		name   string
		at     string // the first command starting so is replaced
		with   func(c string) string
		saying string
	}{
		{"another image loaded", "kind load", func(c string) string { return strings.Replace(c, InstanceImage, "seckill:other", 1) }, "the manifests run"},
		{"another image built", "docker build", func(c string) string { return strings.Replace(c, InstanceImage, "seckill:other", 1) }, "the manifests run"},
		{"another cluster", "kind create", func(c string) string { return strings.Replace(c, "--name seckill", "--name other", 1) }, `cluster name "other"`},
		{"another Chaos Mesh", "helm install", func(c string) string { return strings.Replace(c, "2.8.3", "2.7.0", 1) }, "Chaos Mesh not 2.8.3"},
		{"a job never applied", "kubectl -n lab-1 wait", func(c string) string {
			ws := words(c)
			i := slices.IndexFunc(ws, func(w string) bool { return strings.HasPrefix(w, "job/") })
			return strings.Replace(c, ws[i], "job/nope", 1)
		}, "no Job job/nope applied before"},
		{"another namespace", "kubectl -n lab-1 wait", func(c string) string { return strings.Replace(c, "-n lab-1", "-n lab-2", 1) }, "namespace lab-2"},
		{"logs of one container not named", "kubectl -n lab-1 logs -f", func(c string) string { return strings.TrimSuffix(c, " -c bench") }, "logs without -c"},
		{"a container the job lacks", "kubectl -n lab-1 logs -f", func(c string) string { return strings.Replace(c, "-c bench", "-c nope", 1) }, "has no container nope"},
		{"a workload never applied", "kubectl -n lab-1 rollout status", func(c string) string { return "kubectl -n lab-1 rollout status deployment/nope --timeout=10m" }, "no deployment/nope applied before"},
		{"an overlay that does not exist", "kubectl -n lab-1 apply -k", func(string) string { return "kubectl -n lab-1 apply -k deploy/k8s/nope" }, "nope"},
		{"a chaos file that does not exist", "kubectl -n lab-1 apply -f", func(string) string { return "kubectl -n lab-1 apply -f deploy/chaos/nope.yaml" }, "nope.yaml"},
		{"a chaos command not the scenario's", "kubectl -n lab-1 apply -k deploy/k8s/chaos", func(c string) string { return c + "/" }, "not a command of seckill scenario chaos slow-db"},
		{"a command it does not know", "kubectl -n lab-1 apply -k", func(string) string { return "curl http://127.0.0.1/" }, "a command this test does not know"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := newRunbookChecker(t)
			i := first(tt.at)
			for _, c := range cmds[:i] {
				if ps := rc.check(c); len(ps) > 0 {
					t.Fatalf("the real runbook's %q: %v", c, ps)
				}
			}
			bad := tt.with(cmds[i])
			if bad == cmds[i] {
				t.Fatalf("the mutation left %q as it was", bad)
			}
			ps := rc.check(bad)
			if !slices.ContainsFunc(ps, func(p string) bool { return strings.Contains(p, tt.saying) }) {
				t.Errorf("%q: problems %q, want one saying %q", bad, ps, tt.saying)
			}
		})
	}
}

// runbookChecker checks the runbook's commands in order (see TestRunbook),
// keeping what they applied.
type runbookChecker struct {
	files                      map[string][]byte
	schemas                    map[string]*spec.Schema
	pair                       []string // seckill scenario chaos slow-db's commands
	jobs, containers, workload map[string]bool
}

func newRunbookChecker(t *testing.T) *runbookChecker {
	t.Helper()
	files, err := committed()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Find("slow-db")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := sc.ClusterCommands("lab-1")
	if err != nil {
		t.Fatal(err)
	}
	return &runbookChecker{files: files, schemas: crdSchemas(t), pair: pair,
		jobs: map[string]bool{}, containers: map[string]bool{}, workload: map[string]bool{}}
}

func (rc *runbookChecker) record(o *objects) {
	for n, j := range o.jobs {
		rc.jobs[n] = true
		for _, c := range append(j.Spec.Template.Spec.InitContainers, j.Spec.Template.Spec.Containers...) {
			rc.containers[n+"/"+c.Name] = true
		}
	}
	for n := range o.deployments {
		rc.workload["deployment/"+n] = true
	}
	for n := range o.statefulSets {
		rc.workload["statefulset/"+n] = true
	}
}

// check returns what is wrong with command c (none: nil).
func (rc *runbookChecker) check(c string) []string {
	ws := words(c)
	var ps []string
	switch ws[0] {
	case "kind":
		if n := flagOf(ws, "--name"); n != "seckill" {
			ps = append(ps, fmt.Sprintf("cluster name %q", n))
		}
		if ws[1] == "load" && ws[3] != InstanceImage {
			ps = append(ps, fmt.Sprintf("loads %s, the manifests run %s", ws[3], InstanceImage))
		}
	case "docker":
		if flagOf(ws, "-t") != InstanceImage {
			ps = append(ps, fmt.Sprintf("builds %s, the manifests run %s", flagOf(ws, "-t"), InstanceImage))
		}
	case "helm":
		if ws[1] == "install" && (flagOf(ws, "--version") != "2.8.3" || !strings.Contains(c, "chaosDaemon.runtime=containerd") ||
			!strings.Contains(c, "chaosDaemon.socketPath=/run/containerd/containerd.sock")) {
			ps = append(ps, "Chaos Mesh not 2.8.3 (the vendored CRDs') on containerd")
		}
	case "echo":
		if _, to, _ := strings.Cut(c, "> "); to != "deploy/k8s/"+Unrendered[0] {
			ps = append(ps, fmt.Sprintf("writes %q, not the admin token the base reads", to))
		}
	case "sleep":
	case "kubectl":
		ps = rc.kubectl(ws)
		if strings.Contains(c, "chaos") && !slices.Contains(rc.pair, c) {
			ps = append(ps, "not a command of seckill scenario chaos slow-db")
		}
	default:
		ps = append(ps, "a command this test does not know")
	}
	return ps
}

// kubectl checks one kubectl command and records what it applies.
func (rc *runbookChecker) kubectl(ws []string) []string {
	var ps []string
	args := slices.Clone(ws[1:])
	if ns := flagOf(args, "-n"); ns != "" && ns != "lab-1" {
		ps = append(ps, "namespace "+ns)
	}
	if i := slices.Index(args, "-n"); i >= 0 {
		args = slices.Delete(args, i, i+2)
	}
	if i := slices.Index(args, ">"); i >= 0 {
		args = args[:i] // the output's file
	}
	verb := args[0]
	if verb != "apply" && verb != "delete" {
		// Only apply and delete take files; logs -f follows.
		args = slices.DeleteFunc(args, func(a string) bool { return a == "-f" })
	}
	if k := flagOf(args, "-k"); k != "" {
		docs, err := buildRepo(rc.files, k, nil)
		if err != nil {
			return append(ps, err.Error())
		}
		o, err := decodeStrict(docs)
		if err != nil {
			return append(ps, err.Error())
		}
		rc.record(o)
		return ps
	}
	if f := flagOf(args, "-f"); f != "" {
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			return append(ps, err.Error())
		}
		docs, err := splitDocs(b)
		if err != nil {
			return append(ps, err.Error())
		}
		for _, d := range docs {
			if strings.HasPrefix(fmt.Sprint(d["apiVersion"]), "chaos-mesh.org/") {
				if err := validateChaos(rc.schemas, d); err != nil {
					ps = append(ps, err.Error())
				}
			} else if _, err := decodeStrict([]doc{d}); err != nil {
				ps = append(ps, err.Error())
			}
		}
		return ps
	}
	job := func(ref string) {
		name, ok := strings.CutPrefix(ref, "job/")
		if !ok || !rc.jobs[name] {
			ps = append(ps, fmt.Sprintf("no Job %s applied before", ref))
		}
		if c := flagOf(args, "-c"); c != "" && !rc.containers[name+"/"+c] {
			ps = append(ps, fmt.Sprintf("Job %s has no container %s", name, c))
		}
	}
	switch {
	case verb == "create" || verb == "delete" && args[1] == "namespace":
	case verb == "logs" || verb == "wait":
		i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "job/") })
		if i < 0 {
			return append(ps, "names no job/NAME")
		}
		job(args[i])
		if verb == "logs" && !slices.Contains(args, "-c") {
			ps = append(ps, "logs without -c: a bench pod has two containers")
		}
	case verb == "get" && args[1] == "job":
		job("job/" + args[2])
	case verb == "rollout" && args[1] == "status":
		if !rc.workload[args[2]] {
			ps = append(ps, fmt.Sprintf("no %s applied before", args[2]))
		}
	default:
		ps = append(ps, "a kubectl command this test does not know")
	}
	return ps
}
