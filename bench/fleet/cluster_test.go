package fleet

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"strings"
	"testing"
)

func TestResolveInstances(t *testing.T) {
	got, err := ResolveInstances(context.Background(), net.DefaultResolver, "localhost:8080")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, "http://127.0.0.1:8080") {
		t.Errorf("localhost:8080 resolved to %v, want http://127.0.0.1:8080 among them", got)
	}
	for _, bad := range []string{"localhost", "localhost:0", "localhost:x", "no-such-host.invalid:8080"} {
		if _, err := ResolveInstances(context.Background(), net.DefaultResolver, bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestClusterFromEnv(t *testing.T) {
	t.Setenv(EnvNodeName, "")
	if c := ClusterFromEnv(context.Background()); c != nil {
		t.Fatalf("outside a cluster: %+v", c)
	}
	t.Setenv(EnvNodeName, "node-a")
	t.Setenv(EnvPodName, "seckill-bench-x")
	t.Setenv(EnvPodNamespace, "lab-1")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	c := ClusterFromEnv(context.Background())
	if c == nil || c.Node != "node-a" || c.Namespace != "lab-1" || c.Pod != "seckill-bench-x" || c.PodsError == "" {
		t.Fatalf("%+v", c)
	}
}

func TestDecodePodList(t *testing.T) {
	const list = `{"kind":"PodList","apiVersion":"v1","items":[
	{"metadata":{"name":"seckill-7d9-abc","labels":{"app.kubernetes.io/name":"seckill"}},"spec":{"nodeName":"n2"}},
	{"metadata":{"name":"etcd-0","labels":{"app.kubernetes.io/name":"etcd"}},"spec":{"nodeName":"n1"}}]}`
	pods, err := decodePodList(json.NewDecoder(strings.NewReader(list)))
	if err != nil {
		t.Fatal(err)
	}
	want := []ClusterPod{{Name: "etcd-0", App: "etcd", Node: "n1"}, {Name: "seckill-7d9-abc", App: "seckill", Node: "n2"}}
	if !slices.Equal(pods, want) {
		t.Errorf("%+v, want %+v", pods, want)
	}
}
