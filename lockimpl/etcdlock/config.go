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

// ServerFlags are the etcd (3.4) server flags the lock's recovery after a
// loss of quorum relies on; every member of a cluster serving the lock
// should run with them.
//
// --pre-vote=true: a member cut off from the others (the one left running
// when 2 of 3 stop) campaigns again and again while no quorum answers, and
// without pre-vote each campaign raises its term; when the others return,
// that higher term deposes the first leader they elect, and the elections
// go on for 1-4 s (measured by TestRecoveryAfterQuorumLoss: a median of
// 4.9 s before the first acquisition with the leader on the surviving
// member, against 1.1 s with pre-vote). A pre-vote that cannot win does
// not raise the term. etcd 3.5 turned it on by default.
func ServerFlags() []string {
	return []string{"--pre-vote=true"}
}
