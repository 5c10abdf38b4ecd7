package stock

import "fmt"

// CounterGoodsBase is where the lock-alone goods start: a goods id at or
// above it is kept by the CounterStore (a counter in Redis) instead of the
// database, so a purchase under a lock measures the lock, not the
// database's transaction (`seckill bench --mode lock`).
const CounterGoodsBase int64 = 1_000_000_000_000_000

// LockAlone reports whether goods id is a lock-alone goods.
func LockAlone(goodsID int64) bool { return goodsID >= CounterGoodsBase }

// ErrLockAloneOnly is the answer of a strategy that deducts in the
// database itself (row lock, version, conditional UPDATE, batch) on a
// lock-alone goods, which has no row.
var ErrLockAloneOnly = fmt.Errorf("%w: a lock-alone goods (id >= %d) is a Redis counter with no database row: only the read-modify-write under a lock (or none) deducts it", ErrInvalid, CounterGoodsBase)

// errNoCounter answers for the lock-alone goods of an instance without a
// counter.
var errNoCounter = fmt.Errorf("%w: the lock-alone goods (id >= %d) need the counter's Redis ($SECKILL_COUNTER_REDIS), which this instance was not given", ErrBackendUnavailable, CounterGoodsBase)

// eachFails fails every deduction of a batch with err.
func eachFails(ds []Deduction, err error) ([]Result, []error) {
	errs := make([]error, len(ds))
	for i := range errs {
		errs[i] = err
	}
	return make([]Result, len(ds)), errs
}
