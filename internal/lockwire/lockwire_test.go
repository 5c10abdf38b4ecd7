package lockwire

import (
	"testing"

	"github.com/seckill-lab/seckill/stock/catalog"
)

// TestEveryLockerOpens checks the table against the registry: a locker,
// and only a locker, opens a lock backend.
func TestEveryLockerOpens(t *testing.T) {
	for _, s := range catalog.Strategies() {
		_, ok := OpenerOf(s.Name)
		if (s.Kind == catalog.KindLocker) != ok {
			t.Errorf("%s: kind %s with an opener = %v: a locker, and only a locker, opens a lock backend", s.Name, s.Kind, ok)
		}
	}
	for name := range openers {
		if _, ok := catalog.Lookup(name); !ok {
			t.Errorf("opener of %q, which the registry does not have", name)
		}
	}
}
