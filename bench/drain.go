package bench

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// An asynchronous strategy (catalog.Strategy.Async: redis-stream) answers a
// purchase before its order is written. The run then waits for the order
// queue to drain (every entry read and acknowledged) before it audits, so
// the invariants compare the answers with the orders as they end up, and
// reports how long the drain took and the order lag, from accept to
// COMMIT.

// DrainTimeout bounds the wait for an asynchronous strategy's queue.
const DrainTimeout = 2 * time.Minute

// drainPoll is how often the queue is asked.
const drainPoll = 20 * time.Millisecond

// OrderQueue is what an asynchronous strategy's run left in its queue.
type OrderQueue struct {
	// DrainS is the time from the run's last answer until every entry was
	// read and acknowledged.
	DrainS float64 `json:"drain_s"`
	// Accepted, Written, Duplicates and Rejected are the goods' entries
	// (stock.QueueStatus): accepted by the script, written to MySQL,
	// delivered again after being written (skipped), not writable.
	Accepted   int64 `json:"accepted"`
	Written    int64 `json:"written"`
	Duplicates int64 `json:"duplicates"`
	Rejected   int64 `json:"rejected"`
	// Reclaimed are entries delivered again to be written: taken over
	// from a consumer that held them too long (a killed instance's), or
	// read again by their own consumer after its restart.
	Reclaimed int64 `json:"reclaimed"`
	// Batches are the consumers' batches that held the goods' entries,
	// one MySQL transaction each (stock.QueueStatus.Batches).
	Batches int64 `json:"batches"`
	// LagP50MS, LagP99MS and LagMaxMS are the order lag's percentiles
	// over the Written orders: from the script's accept to the COMMIT.
	LagP50MS float64 `json:"lag_p50_ms"`
	LagP99MS float64 `json:"lag_p99_ms"`
	LagMaxMS float64 `json:"lag_max_ms"`
}

// queueStatus asks the instance at base for goods' order queue.
func (a *admin) queueStatus(ctx context.Context, base string, goods int64) (stock.QueueStatus, error) {
	var st stock.QueueStatus
	err := a.do(ctx, http.MethodGet, base, "/admin/queue?goods_id="+strconv.FormatInt(goods, 10), nil, &st)
	return st, err
}

// drainQueue waits until goods' queue is drained, asking the instances in
// turn (one may be restarting after a fault), and returns the queue's
// figures.
func drainQueue(ctx context.Context, adm *admin, instances []string, goods int64) (OrderQueue, error) {
	ctx, cancel := context.WithTimeout(ctx, DrainTimeout)
	defer cancel()
	began := time.Now()
	var last error
	for i := 0; ; i++ {
		st, err := adm.queueStatus(ctx, instances[i%len(instances)], goods)
		if err == nil && st.Drained() {
			return orderQueue(st, time.Since(began)), nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last == nil {
				last = fmt.Errorf("%d entries pending and %d not read", st.Pending, st.Lag)
			}
			return OrderQueue{}, fmt.Errorf("the order queue did not drain within %s: %w", DrainTimeout, last)
		case <-time.After(drainPoll):
		}
	}
}

// orderQueue sums up a drained queue.
func orderQueue(st stock.QueueStatus, drain time.Duration) OrderQueue {
	q := OrderQueue{DrainS: drain.Seconds(), Accepted: st.Accepted, Written: st.Written, Duplicates: st.Duplicates, Rejected: st.Rejected, Reclaimed: st.Reclaimed, Batches: st.Batches}
	lags := slices.Clone(st.LagUS)
	slices.Sort(lags)
	pct := func(p float64) float64 {
		if len(lags) == 0 {
			return 0
		}
		i := min(len(lags)-1, int(p*float64(len(lags))))
		return float64(lags[i]) / 1000
	}
	q.LagP50MS, q.LagP99MS = pct(0.50), pct(0.99)
	if len(lags) > 0 {
		q.LagMaxMS = float64(lags[len(lags)-1]) / 1000
	}
	return q
}

// isAsync reports whether strategy answers before its order is written.
func isAsync(strategy string) bool {
	info, ok := catalog.Lookup(strategy)
	return ok && info.Async
}

// orderQueueTable lists the order queue of every asynchronous run.
func orderQueueTable(runs []RunResult) table {
	t := table{Title: "Order queue", Header: []string{"run", "accepted", "written", "duplicates", "rejected", "reclaimed", "orders", "per batch", "drain s", "lag p50 ms", "lag p99 ms", "lag max ms"}}
	nameOf := runNamer(runs)
	for _, r := range runs {
		q := r.Queue
		if q == nil {
			continue
		}
		t.Rows = append(t.Rows, []string{fmt.Sprintf("%s #%d", nameOf(r), r.Repeat), fmt.Sprint(q.Accepted), fmt.Sprint(q.Written),
			fmt.Sprint(q.Duplicates), fmt.Sprint(q.Rejected), fmt.Sprint(q.Reclaimed), fmt.Sprint(r.Orders), perBatch(q), fmt.Sprintf("%.2f", q.DrainS),
			fmt.Sprintf("%.1f", q.LagP50MS), fmt.Sprintf("%.1f", q.LagP99MS), fmt.Sprintf("%.1f", q.LagMaxMS)})
		t.Bad = append(t.Bad, q.Rejected > 0 || int64(r.Orders) != q.Written)
	}
	return t
}

// perBatch is the orders written per consumer batch, "-" without one.
func perBatch(q *OrderQueue) string {
	if q.Batches == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(q.Written)/float64(q.Batches))
}

// orderQueueNote explains the order queue table.
const orderQueueNote = "Order queue: an asynchronous strategy answers 202 once Redis accepted the purchase and writes the order later; the run waited for the queue to drain before its audit. accepted: orders queued; written: written to MySQL; duplicates: entries delivered again after their order was written (a consumer killed after its COMMIT, or an entry taken over while its consumer still worked), skipped by the unique request id; rejected: not writable (MySQL's stock did not cover them); reclaimed: delivered again to be written (XAUTOCLAIM of a killed consumer's entries, or its own read again after its restart); per batch: orders written per consumer batch, one MySQL transaction each (a consumer waits --stream-gather, 20 ms by default, after a short batch so that the next one gathers); drain s: from the last answer to an empty queue; lag: from accept to COMMIT."
