package etcdlock

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/lockimpl/locktest"
)

// TestWaitDeleteMissesNoGap: the predecessor is deleted after the waiter
// read it but before its watch is registered, and another write moved etcd
// on meanwhile, as happens under load in the half round trip between the
// read and the watch. waitDelete must decide from its watch's created
// notification and one Get, with no watch event: a watch started at a
// revision etcd has passed (read + 1) is "unsynced", and etcd delivers its
// events on its 100ms sync loop, so a handoff would wait 0 to 100 ms.
// Then: a predecessor that is still there is waited for, even after etcd
// moved on.
func TestWaitDeleteMissesNoGap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := testenv.EtcdClient(t)
	key := "/seckill-test/waitdelete/" + locktest.Key(t)
	put := func() (*clientv3.GetResponse, int64) {
		t.Helper()
		if _, err := c.Put(ctx, key, ""); err != nil {
			t.Fatal(err)
		}
		resp, err := c.Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("get %s: %v, %v", key, resp, err)
		}
		return resp, resp.Header.Revision
	}
	other := func() {
		t.Helper()
		if _, err := c.Put(ctx, key+"-other", "x"); err != nil {
			t.Fatal(err)
		}
	}
	// The watches go through a counter of the events they deliver: a
	// deletion that happened before the watch was registered is decided
	// by the created notification and one Get, never by an event (which an
	// unsynced watch would deliver on etcd's sync loop, 0 to 100 ms later).
	counted := &eventCounter{Watcher: c.Watcher}
	c.Watcher = counted // c is this test's own client
	for i := range 10 {
		resp, read := put()
		other()
		if _, err := c.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
		if err := waitDelete(ctx, c, resp.Kvs[0], read); err != nil {
			t.Fatal(err)
		}
		if n := counted.events.Load(); n != 0 {
			t.Fatalf("deletion %d, made between the read and the watch: waitDelete waited for %d watch events; want it seen from the created notification (an unsynced watch's events wait for etcd's 100 ms sync loop)", i+1, n)
		}
	}

	resp, read := put()
	other()
	done := make(chan error, 1)
	go func() { done <- waitDelete(ctx, c, resp.Kvs[0], read) }()
	select {
	case err := <-done:
		t.Fatalf("waitDelete returned (%v) while the key was still there", err)
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := c.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(ctx, key+"-other"); err != nil {
		t.Fatal(err)
	}
}

// eventCounter is a Watcher that counts the events its watches deliver.
type eventCounter struct {
	clientv3.Watcher
	events atomic.Int64
}

func (w *eventCounter) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	in := w.Watcher.Watch(ctx, key, opts...)
	out := make(chan clientv3.WatchResponse)
	go func() {
		defer close(out)
		for wr := range in {
			w.events.Add(int64(len(wr.Events)))
			select {
			case out <- wr:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
