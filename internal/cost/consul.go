package cost

import (
	"bytes"
	"io"
	"net/http"
	"strings"

	"github.com/seckill-lab/seckill/stock/catalog"
)

// The meter counts Consul's client with an http.RoundTripper (ConsulTransport). A request is one
// round trip, a blocking query (a GET with ?index=) a wait; a PUT or
// DELETE to /v1/kv/, /v1/txn and a session create or destroy is a raft
// write (a session renew is not: the leader resets a timer).

// consulWrites are the Consul HTTP API paths (by prefix) whose PUT or
// DELETE is a raft write. A session renew is not one: the leader resets
// the session's timer.
var consulWrites = []string{"/v1/kv/", "/v1/txn", "/v1/session/create", "/v1/session/destroy"}

// ConsulTransport wraps next so that it counts a Consul client's requests
// (api.Config.HttpClient's transport).
func (m *Meter) ConsulTransport(next http.RoundTripper) http.RoundTripper {
	return consulTransport{m: m, next: next}
}

type consulTransport struct {
	m    *Meter
	next http.RoundTripper
}

func (t consulTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	ok := err == nil && (resp.StatusCode < 300 || refusedInRaft(req, resp))
	t.m.record(req.Context(), catalog.ServerConsul, consulOp(req, ok))
	return resp, err
}

// maxRefusal bounds the body of a refused transaction read to classify it.
const maxRefusal = 64 << 10

// refusedInRaft reports whether resp is a transaction refused by the state
// store (409, "lock is already held" or a failed check), which Consul
// applies through raft like a committed one, rather than by the leader's
// checks before raft (leaderRefusals). The body is read and
// put back for the caller.
func refusedInRaft(req *http.Request, resp *http.Response) bool {
	if resp.StatusCode != http.StatusConflict || !strings.HasPrefix(req.URL.Path, "/v1/txn") {
		return false
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRefusal))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
	if err != nil {
		return false
	}
	for _, r := range leaderRefusals {
		if bytes.Contains(b, []byte(r)) {
			return false
		}
	}
	return true
}

// leaderRefusals are the errors of a transaction the leader refuses before
// raft (agent/consul/txn_endpoint.go preCheck: kvsPreApply and the ACLs).
var leaderRefusals = []string{"due to lock delay", "Permission denied", "Must provide key"}

// consulOp classifies a request answered (ok: 2xx, or a transaction the
// store refused) or not.
func consulOp(req *http.Request, ok bool) op {
	if req.Method == http.MethodGet {
		idx := req.URL.Query().Get("index")
		return op{wait: idx != "" && idx != "0"}
	}
	if !ok || req.Method != http.MethodPut && req.Method != http.MethodDelete {
		return op{}
	}
	for _, p := range consulWrites {
		if strings.HasPrefix(req.URL.Path, p) {
			return op{write: true}
		}
	}
	return op{}
}
