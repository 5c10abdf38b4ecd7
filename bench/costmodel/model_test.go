package costmodel_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/seckill-lab/seckill/bench/costmodel"
	"github.com/seckill-lab/seckill/stock/catalog"
)

func TestSnapshotArithmetic(t *testing.T) {
	a := costmodel.Snapshot{catalog.ServerRedis: {costmodel.Acquire: {RoundTrips: 10, Writes: 4, Waits: 2}}, catalog.ServerMySQL: {costmodel.Held: {RoundTrips: 50, Writes: 10}}}
	b := costmodel.Snapshot{catalog.ServerRedis: {costmodel.Acquire: {RoundTrips: 4, Writes: 2, Waits: 2}}, catalog.ServerMySQL: {costmodel.Held: {RoundTrips: 50, Writes: 10}}}
	d := a.Sub(b)
	if got, want := d[catalog.ServerRedis][costmodel.Acquire], (costmodel.Counts{RoundTrips: 6, Writes: 2}); got != want {
		t.Errorf("Sub: got %+v, want %+v", got, want)
	}
	if _, ok := d[catalog.ServerMySQL]; ok {
		t.Errorf("Sub kept a server with nothing counted: %v", d)
	}
	if got := a.Add(b)[catalog.ServerMySQL][costmodel.Held]; got != (costmodel.Counts{RoundTrips: 100, Writes: 20}) {
		t.Errorf("Add: got %+v", got)
	}
	per := a.Per(2)
	if got, want := per[catalog.ServerRedis][costmodel.Acquire], (costmodel.Rates{RoundTrips: 5, Writes: 2, Waits: 1}); got != want {
		t.Errorf("Per: got %+v, want %+v", got, want)
	}
	if a.Per(0) != nil {
		t.Error("Per(0) is not nil")
	}
}

func TestCriticalPathAndPrediction(t *testing.T) {
	mysqlTx := map[costmodel.Phase]costmodel.Rates{costmodel.Held: {RoundTrips: 5, Writes: 1}, costmodel.RowLocked: {RoundTrips: 2, Writes: 1}}
	cond := costmodel.Conditions{RTTMS: 1, FsyncMS: 4, Fsyncs: map[costmodel.Server]bool{catalog.ServerEtcd: true, catalog.ServerMySQL: true, catalog.ServerZooKeeper: true}}
	fsyncRedis := costmodel.Conditions{RTTMS: 1, FsyncMS: 4, Fsyncs: map[costmodel.Server]bool{catalog.ServerRedis: true, catalog.ServerMySQL: true}}
	cases := []struct {
		name     string
		per      costmodel.PerPurchase
		locker   bool
		rts, fss float64 // the prediction's round trips and fsyncs
		// cond, when set, replaces the common conditions.
		cond *costmodel.Conditions
	}{
		{
			name: "redis lock, Redis without fsync",
			per: costmodel.PerPurchase{
				catalog.ServerRedis: {costmodel.Acquire: {RoundTrips: 4, Writes: 4}, costmodel.AcquireLast: {RoundTrips: 1, Writes: 1}, costmodel.Release: {RoundTrips: 1, Writes: 1}},
				catalog.ServerMySQL: mysqlTx,
			},
			locker: true, rts: 7, fss: 1,
		},
		{
			name: "etcd lock: the release is a raft write, the waiter's last step a read",
			per: costmodel.PerPurchase{
				catalog.ServerEtcd:  {costmodel.Acquire: {RoundTrips: 4, Writes: 1}, costmodel.AcquireLast: {RoundTrips: 1}, costmodel.Release: {RoundTrips: 1, Writes: 1}},
				catalog.ServerMySQL: mysqlTx,
			},
			locker: true, rts: 7, fss: 2,
		},
		{
			name: "zookeeper: no context, the last step taken as one read",
			per: costmodel.PerPurchase{
				catalog.ServerZooKeeper: {costmodel.Acquire: {RoundTrips: 5, Writes: 1}, costmodel.Release: {RoundTrips: 1, Writes: 1}},
				catalog.ServerMySQL:     mysqlTx,
			},
			locker: true, rts: 7, fss: 2,
		},
		{
			name: "redlock over 3 masters at fsync: each round asks them at once, one round trip and one fsync",
			per: costmodel.PerPurchase{
				catalog.ServerRedis: {
					costmodel.Acquire:     {RoundTrips: 6, Writes: 6, Overlapped: 4, OverlappedWrites: 4},
					costmodel.AcquireLast: {RoundTrips: 1, Writes: 1},
					costmodel.Release:     {RoundTrips: 3, Writes: 3, Overlapped: 2, OverlappedWrites: 2},
				},
				catalog.ServerMySQL: mysqlTx,
			},
			locker: true, rts: 7, fss: 3, cond: &fsyncRedis,
		},
		{
			name:   "in-process lock: the transaction alone",
			per:    costmodel.PerPurchase{catalog.ServerMySQL: mysqlTx},
			locker: true, rts: 5, fss: 1,
		},
		{
			name:   "no lock: the row's serial section",
			per:    costmodel.PerPurchase{catalog.ServerMySQL: {costmodel.Held: {RoundTrips: 4, Writes: 1}, costmodel.RowLocked: {RoundTrips: 2, Writes: 1}}},
			locker: false, rts: 2, fss: 1,
		},
		{
			name:   "nothing serial",
			per:    costmodel.PerPurchase{catalog.ServerRedis: {costmodel.Held: {RoundTrips: 1, Writes: 1}}},
			locker: false, rts: 0, fss: 0,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cond := cond
			if tc.cond != nil {
				cond = *tc.cond
			}
			p := costmodel.Predict(costmodel.CriticalPath(tc.per, tc.locker), cond)
			if p.RoundTrips != tc.rts || p.Fsyncs != tc.fss {
				t.Fatalf("got %v round trips and %v fsyncs, want %v and %v", p.RoundTrips, p.Fsyncs, tc.rts, tc.fss)
			}
			serial := tc.rts*cond.RTTMS + tc.fss*cond.FsyncMS
			if p.SerialMS != serial {
				t.Errorf("serial %v ms, want %v", p.SerialMS, serial)
			}
			want := 0.0
			if serial > 0 {
				want = 1000 / serial
			}
			if math.Abs(p.LimitPerS-want) > 1e-9 {
				t.Errorf("limit %v/s, want %v", p.LimitPerS, want)
			}
		})
	}
}

func TestProbes(t *testing.T) {
	ctx := context.Background()
	fs, err := costmodel.FsyncMS(ctx, t.TempDir(), 5)
	if err != nil || fs <= 0 {
		t.Errorf("FsyncMS = %v, %v", fs, err)
	}
	if _, err := costmodel.FsyncMS(ctx, "/nonexistent-dir-of-seckill", 1); err == nil {
		t.Error("FsyncMS in a missing directory did not fail")
	}
	rtt, err := costmodel.LoopbackRTTMS(ctx, 5)
	if err != nil || rtt <= 0 {
		t.Errorf("LoopbackRTTMS = %v, %v", rtt, err)
	}
}

// TestServerTime: the server part of a prediction is each critical step's
// reads and writes at the server's probed time for the operation it uses,
// less the probe's round trip and, for a write where the server fsyncs,
// one fsync; never below 0; an operation not probed adds nothing and is
// named.
func TestServerTime(t *testing.T) {
	mysqlTx := map[costmodel.Phase]costmodel.Rates{costmodel.Acquire: {RoundTrips: 1}, costmodel.Held: {RoundTrips: 5, Writes: 1}}
	probes := costmodel.ServerTimes{
		catalog.ServerRedis: {costmodel.Op("get"): 0.06, costmodel.Op("set"): 0.07, costmodel.Op("eval"): 0.09},
		catalog.ServerEtcd:  {costmodel.Op("get"): 0.35, costmodel.Op("txn"): 0.55, costmodel.Op("delete"): 0.45, costmodel.Op("delete_watched"): 0.75},
		catalog.ServerMySQL: {costmodel.Op("update"): 0.15, costmodel.Op("commit"): 0.45},
	}
	base := costmodel.Conditions{RTTMS: 1, FsyncMS: 0.2, Fsyncs: map[costmodel.Server]bool{catalog.ServerEtcd: true, catalog.ServerMySQL: true, catalog.ServerZooKeeper: true},
		Probes: probes, ProbeRTTMS: 0.05}
	// MySQL's transaction: 4 statements at 0.10 and a COMMIT at 0.45-0.05-0.2.
	const tx = 4*0.10 + 0.20
	cases := []struct {
		name            string
		per             costmodel.PerPurchase
		locker          bool
		cond            func(c costmodel.Conditions) costmodel.Conditions
		wire, disk, srv float64
		byServer        map[costmodel.Server]float64
		unprobed        []string
	}{
		{
			name: "etcd lock: the waiter's read, the watched delete less its fsync, the transaction",
			per: costmodel.PerPurchase{
				catalog.ServerEtcd:  {costmodel.Acquire: {RoundTrips: 4, Writes: 1}, costmodel.AcquireLast: {RoundTrips: 1}, costmodel.Release: {RoundTrips: 1, Writes: 1}},
				catalog.ServerMySQL: mysqlTx,
			},
			locker: true, wire: 7, disk: 0.4, srv: 0.30 + 0.50 + tx,
			byServer: map[costmodel.Server]float64{catalog.ServerEtcd: 0.80, catalog.ServerMySQL: tx},
		},
		{
			name: "redis lock, Redis without fsync: SET and the release script keep their whole server time",
			per: costmodel.PerPurchase{
				catalog.ServerRedis: {costmodel.Acquire: {RoundTrips: 3, Writes: 3}, costmodel.AcquireLast: {RoundTrips: 1, Writes: 1}, costmodel.Release: {RoundTrips: 1, Writes: 1}},
				catalog.ServerMySQL: mysqlTx,
			},
			locker: true, wire: 7, disk: 0.2, srv: 0.02 + 0.04 + tx,
			byServer: map[costmodel.Server]float64{catalog.ServerRedis: 0.06, catalog.ServerMySQL: tx},
		},
		{
			name: "redlock at fsync: a fan-out's writes priced once, each less an fsync, clamped at 0",
			per: costmodel.PerPurchase{
				catalog.ServerRedis: {
					costmodel.AcquireLast: {RoundTrips: 1, Writes: 1},
					costmodel.Release:     {RoundTrips: 3, Writes: 3, Overlapped: 2, OverlappedWrites: 2},
				},
			},
			locker: true,
			cond: func(c costmodel.Conditions) costmodel.Conditions {
				c.Fsyncs = map[costmodel.Server]bool{catalog.ServerRedis: true}
				return c
			},
			wire: 2, disk: 0.4, srv: 0,
		},
		{
			name:   "no lock: the row's serial section at MySQL's statement and COMMIT",
			per:    costmodel.PerPurchase{catalog.ServerMySQL: {costmodel.Held: {RoundTrips: 4, Writes: 1}, costmodel.RowLocked: {RoundTrips: 3, Writes: 1}}},
			locker: false, wire: 3, disk: 0.2, srv: 2*0.10 + 0.20,
			byServer: map[costmodel.Server]float64{catalog.ServerMySQL: 2*0.10 + 0.20},
		},
		{
			name: "zookeeper not probed: its operations add nothing and are named",
			per: costmodel.PerPurchase{
				catalog.ServerZooKeeper: {costmodel.Acquire: {RoundTrips: 3, Writes: 1}, costmodel.Release: {RoundTrips: 1, Writes: 1}},
				catalog.ServerMySQL:     mysqlTx,
			},
			locker: true, wire: 7, disk: 0.4, srv: tx,
			byServer: map[costmodel.Server]float64{catalog.ServerMySQL: tx},
			unprobed: []string{"zookeeper delete_watched", "zookeeper get_children"},
		},
		{
			name: "the fsync measured with the probes is the one taken off a write's probe",
			per:  costmodel.PerPurchase{catalog.ServerMySQL: mysqlTx},
			cond: func(c costmodel.Conditions) costmodel.Conditions {
				c.ProbeFsyncMS = 0.3
				return c
			},
			locker: true, wire: 5, disk: 0.2, srv: 4*0.10 + 0.10,
			byServer: map[costmodel.Server]float64{catalog.ServerMySQL: 4*0.10 + 0.10},
		},
		{
			name: "no probes: wire and disk alone",
			per:  costmodel.PerPurchase{catalog.ServerMySQL: mysqlTx},
			cond: func(c costmodel.Conditions) costmodel.Conditions {
				c.Probes = nil
				return c
			},
			locker: true, wire: 5, disk: 0.2, srv: 0,
		},
		{
			name: "durability none: no fsync is taken off, the COMMIT keeps its whole time",
			per:  costmodel.PerPurchase{catalog.ServerMySQL: mysqlTx},
			cond: func(c costmodel.Conditions) costmodel.Conditions {
				c.Fsyncs = nil
				return c
			},
			locker: true, wire: 5, disk: 0, srv: 4*0.10 + 0.40,
			byServer: map[costmodel.Server]float64{catalog.ServerMySQL: 4*0.10 + 0.40},
		},
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			if tc.cond != nil {
				c = tc.cond(c)
			}
			p := costmodel.Predict(costmodel.CriticalPath(tc.per, tc.locker), c)
			if !near(p.WireMS, tc.wire) || !near(p.DiskMS, tc.disk) || !near(p.ServerMS, tc.srv) {
				t.Errorf("wire %v, disk %v, server %v ms; want %v, %v, %v", p.WireMS, p.DiskMS, p.ServerMS, tc.wire, tc.disk, tc.srv)
			}
			if !near(p.SerialMS, p.WireMS+p.DiskMS+p.ServerMS) || !near(p.LimitPerS, 1000/p.SerialMS) {
				t.Errorf("serial %v ms, limit %v/s: not the sum of the parts", p.SerialMS, p.LimitPerS)
			}
			if len(p.ServerByServer) != len(tc.byServer) {
				t.Errorf("server time by server %v, want %v", p.ServerByServer, tc.byServer)
			}
			for s, want := range tc.byServer {
				if !near(p.ServerByServer[s], want) {
					t.Errorf("server time of %s %v, want %v", s, p.ServerByServer[s], want)
				}
			}
			// The phases split the same time: their sum is the path's.
			var byPhase float64
			for _, ms := range p.ByPhase {
				byPhase += ms
			}
			if !near(byPhase, p.SerialMS) {
				t.Errorf("by phase %v: sum %v, want the serial %v ms", p.ByPhase, byPhase, p.SerialMS)
			}
			slices.Sort(p.Unprobed)
			if !slices.Equal(p.Unprobed, tc.unprobed) {
				t.Errorf("unprobed %v, want %v", p.Unprobed, tc.unprobed)
			}
		})
	}
}
