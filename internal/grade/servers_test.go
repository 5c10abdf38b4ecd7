package grade

import (
	"strings"
	"testing"

	"github.com/seckill-lab/seckill/exercises"
	"github.com/seckill-lab/seckill/internal/stack"
)

// TestCheckServers: a grade on a stack without a server its exercise needs
// (a lab made --for another exercise) is refused with the missing server
// and the lab command that fixes it; a stack with every server is not.
func TestCheckServers(t *testing.T) {
	redisOnly := []stack.Backend{stack.BackendMySQL, stack.BackendRedis}
	for _, c := range []struct {
		exercise string
		backends []stack.Backend
		want     []string // substrings of the error; nil: no error
	}{
		{"redislock", redisOnly, nil},
		{"watchdog", redisOnly, nil},
		{"fencing", redisOnly, []string{"runs no etcd", "it runs mysql, redis", "--for fencing", "--for " + exercises.ForAll}},
		{"fencing", nil, nil}, // an older state: every server
		{"redislock", []stack.Backend{stack.BackendMySQL, stack.Backend("etcd")}, []string{"runs no redis", "--for redislock"}},
	} {
		e, err := exercises.Find(c.exercise)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckServers(e, &stack.State{Dir: "/labs/alice", Backends: c.backends})
		switch {
		case c.want == nil && err != nil:
			t.Errorf("%s on %v: %v, want none", c.exercise, c.backends, err)
		case c.want != nil && err == nil:
			t.Errorf("%s on %v: no error, want one naming %q", c.exercise, c.backends, c.want)
		case c.want != nil:
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s on %v: %q does not say %q", c.exercise, c.backends, err, w)
				}
			}
		}
	}
}
