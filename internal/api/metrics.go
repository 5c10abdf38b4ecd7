package api

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the instance's Prometheus series. They implement
// stock.Observer.
type Metrics struct {
	purchases *prometheus.CounterVec
	lockWait  *prometheus.HistogramVec
	lockHold  *prometheus.HistogramVec
	errors    *prometheus.CounterVec
	backend   *prometheus.CounterVec
	watch     *prometheus.CounterVec
}

// NewMetrics registers the series on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	buckets := prometheus.ExponentialBuckets(0.0001, 2.5, 14) // 100µs .. ~15s
	m := &Metrics{
		purchases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_purchases_total", Help: "Purchases by outcome and strategy.",
		}, []string{"outcome", "strategy"}),
		lockWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "seckill_lock_wait_seconds", Help: "Time spent waiting for the lock.", Buckets: buckets,
		}, []string{"strategy"}),
		lockHold: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "seckill_lock_hold_seconds", Help: "Time the lock was held.", Buckets: buckets,
		}, []string{"strategy"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_errors_total", Help: "Errors by kind.",
		}, []string{"kind"}),
		backend: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_lock_backend_events_total", Help: "A lock backend's notable occurrences by strategy and event (Redlock: round_acquired, round_taken, round_split, round_unreachable).",
		}, []string{"strategy", "event"}),
		watch: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_lock_watch_events_total",
			Help: "Watch events delivered to lock waiters (watch-based locks); per acquisition, against seckill_lock_wait_seconds_count: 1 for the recipe, ~N/2 with N waiters for the herd.",
		}, []string{"strategy"}),
	}
	reg.MustRegister(m.purchases, m.lockWait, m.lockHold, m.errors, m.backend, m.watch)
	return m
}

// Purchase counts one purchase outcome.
func (m *Metrics) Purchase(outcome, strategy string) {
	m.purchases.WithLabelValues(outcome, strategy).Inc()
}

// LockWait observes a lock wait.
func (m *Metrics) LockWait(strategy string, d time.Duration) {
	m.lockWait.WithLabelValues(strategy).Observe(d.Seconds())
}

// LockHold observes a lock hold.
func (m *Metrics) LockHold(strategy string, d time.Duration) {
	m.lockHold.WithLabelValues(strategy).Observe(d.Seconds())
}

// Error counts an error of kind.
func (m *Metrics) Error(kind string) { m.errors.WithLabelValues(kind).Inc() }

// Count counts a lock backend's occurrence name under strategy.
func (m *Metrics) Count(strategy, name string) { m.backend.WithLabelValues(strategy, name).Inc() }

// WatchEvent counts one watch event delivered to a waiter for strategy's
// lock.
func (m *Metrics) WatchEvent(strategy string) { m.watch.WithLabelValues(strategy).Inc() }
