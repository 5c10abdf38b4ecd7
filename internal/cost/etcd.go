package cost

import (
	"context"

	"github.com/seckill-lab/seckill/stock/catalog"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
)

// The meter counts etcd's client with gRPC interceptors added to clientv3.Config.DialOptions
// (EtcdDialOptions). A unary call is one round trip; its write is a
// raft entry: Put, DeleteRange, Compact, LeaseGrant, LeaseRevoke, and a
// Txn with a put or a delete in either branch (etcd sends such a Txn
// through raft whichever branch runs). A message sent on a Watch stream
// is a wait, on another stream (lease keep-alive) a round trip.

// etcdWrites say, per gRPC method, whether a call is a raft entry (fsynced
// to the WAL of a quorum before the answer). A method not listed is a read.
var etcdWrites = map[string]func(req any) bool{
	"/etcdserverpb.KV/Put":            always,
	"/etcdserverpb.KV/DeleteRange":    always,
	"/etcdserverpb.KV/Compact":        always,
	"/etcdserverpb.Lease/LeaseGrant":  always,
	"/etcdserverpb.Lease/LeaseRevoke": always,
	"/etcdserverpb.KV/Txn": func(req any) bool {
		t, ok := req.(*pb.TxnRequest)
		return ok && txnWrites(t)
	},
}

// etcdWaits are the streams whose messages wait for a change.
var etcdWaits = map[string]bool{"/etcdserverpb.Watch/Watch": true}

func always(any) bool { return true }

// txnWrites reports whether t has a put or a delete in either branch
// (nested transactions included): etcd then sends it through raft.
func txnWrites(t *pb.TxnRequest) bool {
	for _, ops := range [][]*pb.RequestOp{t.Success, t.Failure} {
		for _, o := range ops {
			if o.GetRequestPut() != nil || o.GetRequestDeleteRange() != nil || o.GetRequestTxn() != nil && txnWrites(o.GetRequestTxn()) {
				return true
			}
		}
	}
	return false
}

// EtcdDialOptions are the gRPC dial options that count an etcd client's
// calls: append them to clientv3.Config.DialOptions. They chain after the
// client's own interceptors, so each retry is counted.
func (m *Meter) EtcdDialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(m.etcdUnary()),
		grpc.WithChainStreamInterceptor(m.etcdStream),
	}
}

// etcdUnary counts one unary call, a write when it succeeded and
// etcdWrites says its request writes. Its signature is gRPC's
// (grpc.UnaryClientInterceptor).
func (m *Meter) etcdUnary() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		w := etcdWrites[method]
		m.record(ctx, catalog.ServerEtcd, op{write: err == nil && w != nil && w(req)})
		return err
	}
}

func (m *Meter) etcdStream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return s, err
	}
	return &etcdStream{ClientStream: s, m: m, ctx: ctx, wait: etcdWaits[method]}, nil
}

// etcdStream counts the messages sent on a stream, in the phase of the
// context that opened it (etcd's client shares a watch stream among the
// watchers of the same context values, so a watch is counted in the phase
// of the stream's first watcher).
type etcdStream struct {
	grpc.ClientStream
	m    *Meter
	ctx  context.Context
	wait bool
}

func (s *etcdStream) SendMsg(msg any) error {
	err := s.ClientStream.SendMsg(msg)
	if err == nil {
		s.m.record(s.ctx, catalog.ServerEtcd, op{wait: s.wait})
	}
	return err
}
