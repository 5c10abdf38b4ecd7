package exercises

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/seckill-lab/seckill/internal/lockwire"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// Prefix is where e's lock keeps its keys in the lab: Redis keys
// "seckill:ex:NAME:KEY", etcd keys under "/seckill/ex/NAME/KEY".
func (e Exercise) Prefix() string {
	if e.Server == catalog.ServerEtcd {
		return "/seckill/ex/" + e.Name + "/"
	}
	return "seckill:ex:" + e.Name + ":"
}

// backend is what the service needs of an exercise's lock: the student's
// Locker per setting, a Ping of its server and a Clear of a key.
type backend struct {
	e Exercise
	c lockwire.Clients
}

// NewLocker builds the student's Locker under the exercise's prefix.
func (b backend) NewLocker(_ context.Context, opts lockimpl.Options) (lockimpl.Locker, error) {
	opts.Prefix = b.e.Prefix()
	l, err := b.e.Student(b.c, opts)
	if err != nil {
		return nil, fmt.Errorf("exercise %s: %w", b.e.Name, err)
	}
	return l, nil
}

// Ping asks the lock's server.
func (b backend) Ping(ctx context.Context) error {
	if b.e.Server == catalog.ServerEtcd {
		if _, err := server.EtcdClient(b.c).Get(ctx, "health-check"); err != nil {
			return fmt.Errorf("exercise %s: etcd: %w", b.e.Name, err)
		}
		return nil
	}
	if err := b.c.Redis.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("exercise %s: redis: %w", b.e.Name, err)
	}
	return nil
}

// Clear drops what the student's lock keeps for key.
func (b backend) Clear(ctx context.Context, key string) error {
	full := b.e.Prefix() + key
	var err error
	if b.e.Server == catalog.ServerEtcd {
		_, err = server.EtcdClient(b.c).Delete(ctx, full, clientv3.WithPrefix())
	} else {
		err = b.c.Redis.Del(ctx, full).Err()
	}
	if err != nil {
		return fmt.Errorf("exercise %s: clear %q: %w", b.e.Name, full, err)
	}
	return nil
}

// Close releases nothing: the clients are the instance's.
func (backend) Close() error { return nil }
