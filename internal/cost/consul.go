package cost

import (
	"net/http"
	"strings"
)

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
	t.m.record(req.Context(), Consul, consulOp(req, err == nil && resp.StatusCode < 300))
	return resp, err
}

// consulOp classifies a request answered (ok) or not.
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
