package consullock

import "time"

// SetLockDelayRetry sets how long a waiter sleeps when a free key refuses
// it twice (a lock-delay) until the test ends; not for parallel tests.
func SetLockDelayRetry(tb interface{ Cleanup(func()) }, d time.Duration) {
	old := lockDelayRetry
	lockDelayRetry = d
	tb.Cleanup(func() { lockDelayRetry = old })
}
