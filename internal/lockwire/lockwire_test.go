package lockwire_test

import (
	"testing"

	"github.com/seckill-lab/seckill/internal/lockwire"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// TestEveryLockerOpens checks the openers, lockwire's own and those the
// lock servers' descriptors provide (internal/server), against the
// registry: a locker, and only a locker, opens a lock backend.
func TestEveryLockerOpens(t *testing.T) {
	for _, s := range catalog.Strategies() {
		_, ok := lockwire.OpenerOf(s.Name)
		if (s.Kind == catalog.KindLocker) != ok {
			t.Errorf("%s: kind %s with an opener = %v: a locker, and only a locker, opens a lock backend", s.Name, s.Kind, ok)
		}
	}
	for _, sp := range server.All {
		if sp.Wiring == nil {
			continue
		}
		for name := range sp.Wiring.Openers {
			if s, ok := catalog.Lookup(name); !ok || s.Server != sp.Wiring.Server {
				t.Errorf("server %s wires %q, which the registry does not have on it (%+v)", sp.Wiring.Server, name, s)
			}
		}
	}
}
