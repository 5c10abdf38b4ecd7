package api_test

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"testing"

	"github.com/seckill-lab/seckill/internal/api"
)

// downAddr is a loopback address nothing listens on: a server that is
// down.
func downAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func dial(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	}
}

// TestHealthDoesNotCascade: a lock server that is down (etcd here) makes
// /healthz 503 for people, but the instance stays ready (/readyz) and
// alive (/livez), so one lock server's fault takes no instance out of
// service; the database the instance cannot work without (Check.Ready)
// does make it not ready.
func TestHealthDoesNotCascade(t *testing.T) {
	svc, st := newService(t, "health-test")
	etcdDown := api.Check{Name: "etcd", Ping: dial(downAddr(t))}
	mysql := api.Check{Name: "mysql", Ping: st.Ping, Ready: true}
	mysqlDown := api.Check{Name: "mysql", Ping: dial(downAddr(t)), Ready: true}
	tests := []struct {
		name   string
		checks []api.Check
		want   map[string]int
	}{
		{"all up", []api.Check{mysql}, map[string]int{"/healthz": 200, "/readyz": 200, "/livez": 200}},
		{"a lock server down", []api.Check{mysql, etcdDown}, map[string]int{"/healthz": 503, "/readyz": 200, "/livez": 200}},
		{"the database down", []api.Check{mysqlDown, etcdDown}, map[string]int{"/healthz": 503, "/readyz": 503, "/livez": 200}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := api.New(api.Options{Service: svc, Checks: tt.checks, Log: log.New(io.Discard, "", 0)})
			for path, code := range tt.want {
				a := call(t, h, http.MethodGet, path, "", "", "")
				if a.status != code {
					t.Errorf("GET %s: %d %v, want %d", path, a.status, a.body, code)
				}
				if a.header.Get("X-Instance") != "health-test" {
					t.Errorf("GET %s: X-Instance %q", path, a.header.Get("X-Instance"))
				}
			}
		})
	}
}
