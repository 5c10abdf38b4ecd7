package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
	"sigs.k8s.io/yaml"

	seckill "github.com/seckill-lab/seckill"
	"github.com/seckill-lab/seckill/internal/scenario"
)

// chaosDir holds the experiments; crdDir the vendored CRDs.
var (
	chaosDir = filepath.Join(repoRoot, "deploy", "chaos")
	crdDir   = filepath.Join("testdata", "chaos-mesh")
)

// crdSchemas reads the vendored Chaos Mesh CRDs: the openAPIV3Schema of
// each kind's served version, by "apiVersion kind".
func crdSchemas(t *testing.T) map[string]*spec.Schema {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s: %v", crdDir, err)
	}
	out := map[string]*spec.Schema{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd struct {
			Spec struct {
				Group string `json:"group"`
				Names struct {
					Kind string `json:"kind"`
				} `json:"names"`
				Versions []struct {
					Name   string `json:"name"`
					Served bool   `json:"served"`
					Schema struct {
						OpenAPIV3Schema json.RawMessage `json:"openAPIV3Schema"`
					} `json:"schema"`
				} `json:"versions"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, v := range crd.Spec.Versions {
			var s spec.Schema
			if err := json.Unmarshal(v.Schema.OpenAPIV3Schema, &s); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out[crd.Spec.Group+"/"+v.Name+" "+crd.Spec.Names.Kind] = &s
		}
	}
	return out
}

// unknownFields lists the fields of data that schema does not declare
// (the API server would prune them; kubectl --validate=strict refuses).
func unknownFields(s *spec.Schema, data any, at string) []string {
	if s == nil {
		return nil
	}
	if v, ok := s.Extensions["x-kubernetes-preserve-unknown-fields"].(bool); ok && v {
		return nil
	}
	var out []string
	switch d := data.(type) {
	case map[string]any:
		for k, v := range d {
			if at == "" && k == "metadata" {
				continue // an ObjectMeta, checked on its own
			}
			if p, ok := s.Properties[k]; ok {
				out = append(out, unknownFields(&p, v, at+"."+k)...)
			} else if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
				out = append(out, unknownFields(s.AdditionalProperties.Schema, v, at+"."+k)...)
			} else if s.AdditionalProperties == nil || !s.AdditionalProperties.Allows {
				if at == "" && (k == "apiVersion" || k == "kind" || k == "metadata") {
					continue
				}
				out = append(out, at+"."+k)
			}
		}
	case []any:
		if s.Items != nil && s.Items.Schema != nil {
			for i, v := range d {
				out = append(out, unknownFields(s.Items.Schema, v, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	}
	return out
}

// validateChaos validates one experiment against its CRD's schema: the
// schema's own rules (types, enums, required) and no unknown field.
func validateChaos(schemas map[string]*spec.Schema, d doc) error {
	key := fmt.Sprint(d["apiVersion"]) + " " + fmt.Sprint(d["kind"])
	s, ok := schemas[key]
	if !ok {
		return fmt.Errorf("%s: no vendored CRD", key)
	}
	var errs []error
	if err := validate.AgainstSchema(s, d, strfmt.Default); err != nil {
		errs = append(errs, err)
	}
	// The CRD leaves metadata to the API server: it is an ObjectMeta.
	mb, err := json.Marshal(d["metadata"])
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(mb, &metav1.ObjectMeta{}); err != nil {
		errs = append(errs, fmt.Errorf("metadata: %w", err))
	}
	if u := unknownFields(s, d, ""); len(u) > 0 {
		slices.Sort(u)
		errs = append(errs, fmt.Errorf("unknown fields %v", u))
	}
	return errors.Join(errs...)
}

// experiment is one file of deploy/chaos.
type experiment struct {
	name, scenario string
	docs           []doc
}

func experiments(t *testing.T) []experiment {
	t.Helper()
	var out []experiment
	for _, name := range seckill.ChaosExperiments() {
		b, ok := seckill.ChaosExperiment(name)
		if !ok {
			t.Fatalf("%s: not embedded", name)
		}
		disk, err := os.ReadFile(filepath.Join(chaosDir, name+".yaml"))
		if err != nil || string(disk) != string(b) {
			t.Fatalf("%s: the embedded file is not deploy/chaos's: %v", name, err)
		}
		e := experiment{name: name}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "# scenario: "); ok {
				e.scenario = strings.TrimSpace(v)
			}
		}
		if e.docs, err = splitDocs([]byte("\n---\n" + string(b))); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, e)
	}
	return out
}

// selects: a Chaos Mesh selector's labels match the pods of a workload
// of the built overlay (a StatefulSet's pod by its pod-name label).
func selects(o *objects, sel map[string]any) error {
	labels, _ := sel["labelSelectors"].(map[string]any)
	if len(labels) == 0 {
		return errors.New("no labelSelectors")
	}
	if pod, ok := labels["statefulset.kubernetes.io/pod-name"].(string); ok {
		i := strings.LastIndex(pod, "-")
		sts, ok := o.statefulSets[pod[:i]]
		if !ok || fmt.Sprint(*sts.Spec.Replicas) <= pod[i+1:] {
			return fmt.Errorf("no pod %s", pod)
		}
		return nil
	}
	var templates []map[string]string
	for _, d := range o.deployments {
		templates = append(templates, d.Spec.Template.Labels)
	}
	for _, s := range o.statefulSets {
		templates = append(templates, s.Spec.Template.Labels)
	}
	for _, tl := range templates {
		match := true
		for k, v := range labels {
			if tl[k] != v {
				match = false
			}
		}
		if match {
			return nil
		}
	}
	return fmt.Errorf("labels %v select no pod", labels)
}

// TestChaosExperiments: every experiment mirrors a lab scenario, validates
// against the vendored Chaos Mesh CRD (or, for the pause Job, decodes
// strictly into Kubernetes types) and selects pods that the overlay of the
// scenario's topology runs.
func TestChaosExperiments(t *testing.T) {
	schemas := crdSchemas(t)
	files, err := committed()
	if err != nil {
		t.Fatal(err)
	}
	built := map[string]*objects{}
	for _, topology := range Topologies {
		docs, err := build(files, topology, nil)
		if err != nil {
			t.Fatal(err)
		}
		if built[topology], err = decodeStrict(docs); err != nil {
			t.Fatal(err)
		}
	}
	crds := 0
	for _, e := range experiments(t) {
		t.Run(e.name, func(t *testing.T) {
			sc, err := scenario.Find(e.scenario)
			if err != nil || e.scenario != e.name {
				t.Fatalf("header names scenario %q: %v (want the file's name)", e.scenario, err)
			}
			o := built[sc.Topology]
			for _, d := range e.docs {
				if strings.HasPrefix(fmt.Sprint(d["apiVersion"]), "chaos-mesh.org/") {
					crds++
					if err := validateChaos(schemas, d); err != nil {
						t.Fatal(err)
					}
					sp := d["spec"].(map[string]any)
					if err := selects(o, sp["selector"].(map[string]any)); err != nil {
						t.Errorf("selector: %v", err)
					}
					if tg, ok := sp["target"].(map[string]any); ok {
						if err := selects(o, tg["selector"].(map[string]any)); err != nil {
							t.Errorf("target: %v", err)
						}
					}
					continue
				}
				if _, err := decodeStrict([]doc{d}); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	if crds < 8 {
		t.Errorf("%d Chaos Mesh experiments, want at least 8", crds)
	}
}

// TestChaosValidationCatches: a wrong field name, a wrong enum value or a
// missing required field fails the CRD validation.
func TestChaosValidationCatches(t *testing.T) {
	schemas := crdSchemas(t)
	b, _ := seckill.ChaosExperiment("slow-db")
	docs, err := splitDocs(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(sp map[string]any)
	}{
		{"unknown field", func(sp map[string]any) { sp["delay"].(map[string]any)["latancy"] = "1s" }},
		{"unknown top field", func(sp map[string]any) { sp["durations"] = "3s" }},
		{"wrong action", func(sp map[string]any) { sp["action"] = "pause" }},
		{"no mode", func(sp map[string]any) { delete(sp, "mode") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := clone(t, docs)[0]
			tc.mutate(d["spec"].(map[string]any))
			if err := validateChaos(schemas, d); err == nil {
				t.Fatal("validates")
			}
		})
	}
	if err := validateChaos(schemas, clone(t, docs)[0]); err != nil {
		t.Fatalf("the unmutated copy: %v", err)
	}
}

// TestChaosJobs: every scenario with a cluster form has its bench Jobs
// (scenario.ClusterRuns) under deploy/k8s/chaos, and each builds with
// kustomize over the overlay of the scenario's topology, decodes strictly,
// is a bench Job as seckill-bench is (checkBenchJob) and runs `seckill
// bench` with BenchArgs and the run's flags: the scenario's strategy only,
// fencing on in the fenced Job only, the experiment named.
func TestChaosJobs(t *testing.T) {
	files, err := committed()
	if err != nil {
		t.Fatal(err)
	}
	dirs := 0
	for _, e := range experiments(t) {
		sc, err := scenario.Find(e.scenario)
		if err != nil {
			t.Fatal(err)
		}
		runs, err := sc.ClusterRuns()
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) == 0 {
			t.Errorf("%s: no bench Job", sc.Name)
		}
		for _, r := range runs {
			t.Run(sc.Name+"/"+string(r.Protection), func(t *testing.T) {
				dir := strings.TrimPrefix(r.Dir, "deploy/k8s/")
				if _, ok := files[dir+"/kustomization.yaml"]; !ok {
					t.Fatalf("no %s/kustomization.yaml", r.Dir)
				}
				dirs++
				o := buildObjects(t, files, "test-chaos", map[string]string{"test-chaos/kustomization.yaml": "resources:\n- ../" + sc.Topology + "\n- ../" + dir + "\n"})
				if err := checkBenchJob(o, r.Job); err != nil {
					t.Fatal(err)
				}
				args := o.jobs[r.Job].Spec.Template.Spec.Containers[0].Args
				if want := append(slices.Clone(BenchArgs), r.Args...); !slices.Equal(args, want) {
					t.Errorf("args %q, want %q", args, want)
				}
				if i := slices.Index(args, "--strategies"); i < 0 || args[i+1] != sc.Strategies[0] {
					t.Errorf("the Job does not run %s alone: %q", sc.Strategies[0], args)
				}
				if slices.Contains(args, "--fencing") != (r.Protection == scenario.ProtectFencing) {
					t.Errorf("%s: --fencing %v", r.Protection, slices.Contains(args, "--fencing"))
				}
				if i := slices.Index(args, "--experiment"); i < 0 || args[i+1] != sc.Name {
					t.Errorf("the experiment is not named: %q", args)
				}
				// The chaos experiments select the lab's pods, not the bench's.
				for _, d := range e.docs {
					if sp, ok := d["spec"].(map[string]any); ok {
						if sel, ok := sp["selector"].(map[string]any); ok {
							labels, _ := sel["labelSelectors"].(map[string]any)
							if labels[LabelName] == o.jobs[r.Job].Spec.Template.Labels[LabelName] {
								t.Errorf("the experiment selects the bench's pod")
							}
						}
					}
				}
			})
		}
	}
	var rendered []string
	for p := range files {
		if strings.HasPrefix(p, "chaos/") && strings.HasSuffix(p, "/kustomization.yaml") {
			rendered = append(rendered, p)
		}
	}
	if len(rendered) != dirs {
		t.Errorf("%d kustomizations under deploy/k8s/chaos, %d bench Jobs", len(rendered), dirs)
	}
}
