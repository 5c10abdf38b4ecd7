package stack_test

import (
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill"
	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/internal/scenario"
)

// nginxDuration returns the value of the directive name in nginx.conf.
func nginxDuration(t *testing.T, name string) time.Duration {
	t.Helper()
	for _, l := range strings.Split(seckill.NginxConf(), "\n") {
		l, _, _ = strings.Cut(l, "#")
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+" "); ok {
			d, err := time.ParseDuration(strings.TrimSuffix(strings.TrimSpace(v), ";"))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return d
		}
	}
	t.Fatalf("nginx.conf has no %s", name)
	return 0
}

// TestNginxReadTimeout: proxy_read_timeout, the only end of a paused
// instance's requests, stays above every wait the lab sets itself (each
// scenario's lock_wait plus its work) and above the bench's client timeout,
// so nginx never cuts a request the lab waits for; it is well below the
// 180 s it was; and proxy_next_upstream_timeout leaves a timed-out keyed
// purchase its retry.
func TestNginxReadTimeout(t *testing.T) {
	read := nginxDuration(t, "proxy_read_timeout")
	var need time.Duration
	for _, s := range scenario.All() {
		for _, l := range []scenario.Load{s.Load, s.Short} {
			if w := l.LockWait + l.WorkDelay; w > need {
				need = w
			}
		}
	}
	need = max(need, bench.DefaultRequestTimeout)
	if read <= need || read > need+10*time.Second {
		t.Errorf("proxy_read_timeout %s: want above %s (the longest lock_wait + work of a scenario, and the bench's request timeout) by at most 10 s", read, need)
	}
	if next := nginxDuration(t, "proxy_next_upstream_timeout"); next <= read {
		t.Errorf("proxy_next_upstream_timeout %s <= proxy_read_timeout %s: a timed-out try would never be retried", next, read)
	}
	if c := nginxDuration(t, "proxy_connect_timeout"); c >= read {
		t.Errorf("proxy_connect_timeout %s >= proxy_read_timeout %s", c, read)
	}
}
