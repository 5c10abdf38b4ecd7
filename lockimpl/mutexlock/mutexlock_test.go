package mutexlock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/lockimpl/locktest"
	"github.com/seckill-lab/seckill/lockimpl/mutexlock"
)

func TestConformance(t *testing.T) {
	locktest.Run(t, locktest.Factory{
		New: func(testing.TB, lockimpl.Options) lockimpl.Locker { return mutexlock.New(lockimpl.Options{}) },
		AssertClean: func(t testing.TB, l lockimpl.Locker, key string) {
			if n := l.(*mutexlock.Locker).Held(); n != 0 {
				t.Errorf("%d keys still tracked after release", n)
			}
		},
	})
}

// TestInstancesDoNotExclude documents the flaw the `mutex` strategy shows:
// two instances (two service processes) hold the same key at once.
func TestInstancesDoNotExclude(t *testing.T) {
	ctx := context.Background()
	a, b := mutexlock.New(lockimpl.Options{}), mutexlock.New(lockimpl.Options{})
	la, err := a.Lock(ctx, "goods-1")
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.TryLock(ctx, "goods-1")
	if err != nil {
		t.Fatalf("second instance: %v; want success (in-process locks do not span instances)", err)
	}
	if _, err := a.TryLock(ctx, "goods-1"); !errors.Is(err, lockimpl.ErrLocked) {
		t.Fatalf("same instance: err = %v, want ErrLocked", err)
	}
	for _, l := range []*lockimpl.Lease{la, lb} {
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPrototypeConformance runs the suite on the flawed Prototype lock: the
// exclusion cases do not apply (it excludes nobody by design); the suite's
// DoesNotExclude shows that, and the rest (double unlock) must hold.
func TestPrototypeConformance(t *testing.T) {
	locktest.Run(t, locktest.Factory{
		New:  func(testing.TB, lockimpl.Options) lockimpl.Locker { return mutexlock.Prototype{} },
		Caps: locktest.Capabilities{NoExclusion: true},
	})
}
