package etcdlock

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// ClientConfig is the etcd client configuration a service instance uses
// for the lock (and the recovery test uses, so it measures the same
// client): endpoints, the dial timeout, no logging. ctx bounds the
// client's life (pass a context that is not cancelled with a request).
func ClientConfig(ctx context.Context, endpoints []string) clientv3.Config {
	return clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 2 * time.Second,
		Logger:      zap.NewNop(),
		Context:     ctx,
	}
}
