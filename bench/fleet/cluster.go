package fleet

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The downward-API variables a bench Job passes (deploy/k8s/bench): the
// bench's own node, pod and namespace.
const (
	EnvNodeName     = "SECKILL_NODE_NAME"
	EnvPodName      = "SECKILL_POD_NAME"
	EnvPodNamespace = "SECKILL_POD_NAMESPACE"
)

// serviceAccountDir is where Kubernetes mounts a pod's service account.
var serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// Cluster records that a bench ran on Kubernetes, and where: its own pod
// and node, and the node of every pod of its namespace (the instances and
// the servers), next to the conditions (report.json environment.cluster).
type Cluster struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Node      string `json:"node"`
	// Pods are the namespace's pods, when the Job's service account may
	// list them; PodsError says why not otherwise.
	Pods      []ClusterPod `json:"pods,omitempty"`
	PodsError string       `json:"pods_error,omitempty"`
}

// ClusterPod is one pod of the lab and its node.
type ClusterPod struct {
	Name string `json:"name"`
	// App is its app.kubernetes.io/name label (seckill, nginx, a server's group...).
	App  string `json:"app"`
	Node string `json:"node"`
}

// String is the cluster part of the conditions line.
func (c *Cluster) String() string {
	nodes := map[string]bool{}
	for _, p := range c.Pods {
		nodes[p.Node] = true
	}
	return fmt.Sprintf("on Kubernetes, namespace %s, bench on node %s, %d pods on %d nodes", c.Namespace, c.Node, len(c.Pods), len(nodes))
}

// ClusterFromEnv describes the cluster the bench runs in, nil outside one
// (no SECKILL_NODE_NAME).
func ClusterFromEnv(ctx context.Context) *Cluster {
	node := os.Getenv(EnvNodeName)
	if node == "" {
		return nil
	}
	c := &Cluster{Namespace: os.Getenv(EnvPodNamespace), Pod: os.Getenv(EnvPodName), Node: node}
	pods, err := listPods(ctx, c.Namespace)
	if err != nil {
		c.PodsError = err.Error()
	}
	c.Pods = pods
	return c
}

// listPods lists the pods of namespace through the API server, with the
// pod's service account.
func listPods(ctx context.Context, namespace string) ([]ClusterPod, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || namespace == "" {
		return nil, fmt.Errorf("no API server (KUBERNETES_SERVICE_HOST) or namespace")
	}
	token, err := os.ReadFile(serviceAccountDir + "/token")
	if err != nil {
		return nil, fmt.Errorf("service account token: %w", err)
	}
	ca, err := os.ReadFile(serviceAccountDir + "/ca.crt")
	if err != nil {
		return nil, fmt.Errorf("service account CA: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	u := "https://" + net.JoinHostPort(host, port) + "/api/v1/namespaces/" + namespace + "/pods"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("list pods: %s", resp.Status)
	}
	return decodePodList(json.NewDecoder(resp.Body))
}

// decodePodList reads the name, app label and node of each pod of a
// PodList, sorted by app and name.
func decodePodList(dec *json.Decoder) ([]ClusterPod, error) {
	var list struct {
		Items []struct {
			Metadata struct {
				Name   string            `json:"name"`
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				NodeName string `json:"nodeName"`
			} `json:"spec"`
		} `json:"items"`
	}
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("decode the pod list: %w", err)
	}
	var out []ClusterPod
	for _, it := range list.Items {
		out = append(out, ClusterPod{Name: it.Metadata.Name, App: it.Metadata.Labels["app.kubernetes.io/name"], Node: it.Spec.NodeName})
	}
	slices.SortFunc(out, func(a, b ClusterPod) int { return cmp.Or(cmp.Compare(a.App, b.App), cmp.Compare(a.Name, b.Name)) })
	return out, nil
}

// ResolveInstances finds a fleet's instances from the A records of a
// headless Service: NAME:PORT gives http://IP:PORT for each address,
// sorted.
func ResolveInstances(ctx context.Context, r *net.Resolver, hostport string) ([]string, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, fmt.Errorf("--instances-dns %q: want NAME:PORT: %w", hostport, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
		return nil, fmt.Errorf("--instances-dns %q: bad port", hostport)
	}
	ips, err := r.LookupHost(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("--instances-dns: resolve %s: %w", host, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("--instances-dns: %s has no address", host)
	}
	var out []string
	for _, ip := range ips {
		out = append(out, "http://"+net.JoinHostPort(ip, port))
	}
	slices.Sort(out)
	return out, nil
}
