package adminclient_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench/adminclient"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/stock"
)

// The tests talk to a real instance of the `make test` stack, and change
// nothing there: reads, and writes the instance refuses.
func instance(t *testing.T) (base, token string) {
	t.Helper()
	return testenv.List(t, testenv.InstanceURLs)[0], testenv.Get(t, testenv.AdminToken)
}

func TestAnswers(t *testing.T) {
	base, token := instance(t)
	ctx := context.Background()
	var cfg stock.Config
	if err := adminclient.New(token).Do(ctx, http.MethodGet, base, "/admin/strategy", nil, &cfg); err != nil || cfg.Name == "" {
		t.Fatalf("GET /admin/strategy: %+v, %v", cfg, err)
	}
	tests := []struct {
		name   string
		token  string
		method string
		path   string
		in     any
		want   error
		code   string
	}{
		{"wrong token", "nope", http.MethodGet, "/admin/strategy", nil, adminclient.ErrUnauthorized, ""},
		{"unknown strategy", token, http.MethodPut, "/admin/strategy", map[string]any{"name": "nope"}, adminclient.ErrAdminResponse, "unknown_strategy"},
		{"no route", token, http.MethodGet, "/admin/nope", nil, adminclient.ErrAdminResponse, "not_found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := adminclient.New(tc.token).Do(ctx, tc.method, base, tc.path, tc.in, nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			var ae *adminclient.Error
			if tc.code != "" && (!errors.As(err, &ae) || ae.Code != tc.code) {
				t.Errorf("err %v, want an *Error with code %s", err, tc.code)
			}
		})
	}
	var after stock.Config
	if err := adminclient.New(token).Do(ctx, http.MethodGet, base, "/admin/strategy", nil, &after); err != nil || after.Name != cfg.Name {
		t.Errorf("the refused requests changed the strategy: %s -> %s (%v)", cfg.Name, after.Name, err)
	}
}

func TestUnreachable(t *testing.T) {
	base := "http://127.0.0.1:1"
	if err := adminclient.New("x").Do(context.Background(), http.MethodGet, base, "/admin/strategy", nil, nil); !errors.Is(err, adminclient.ErrUnreachable) {
		t.Errorf("Do: %v, want ErrUnreachable", err)
	}
	if _, err := adminclient.New("x").OpenEvents(context.Background(), base, false); !errors.Is(err, adminclient.ErrUnreachable) {
		t.Errorf("OpenEvents: %v, want ErrUnreachable", err)
	}
}

// TestEventStream: the replay ends with its marker, and a stream cut by
// its ctx ends the reader.
func TestEventStream(t *testing.T) {
	base, token := instance(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body, err := adminclient.New(token).OpenEvents(ctx, base, true)
	if err != nil {
		t.Fatal(err)
	}
	replayed := make(chan struct{})
	done := make(chan error, 1)
	go adminclient.ReadEvents(body, func(it adminclient.Item) bool {
		switch {
		case it.Replayed:
			close(replayed)
			cancel() // then the stream ends
		case it.Err != nil:
			done <- it.Err
		}
		return true
	})
	select {
	case <-replayed:
	case <-time.After(20 * time.Second):
		t.Fatal("no end of the replay within 20s")
	}
	if err := <-done; err == nil {
		t.Error("the stream's end carried no error")
	}
	if _, err := adminclient.New("nope").OpenEvents(context.Background(), base, false); !errors.Is(err, adminclient.ErrUnauthorized) {
		t.Errorf("OpenEvents with a wrong token: %v, want ErrUnauthorized", err)
	}
}
