package sqlstore

import "context"

// EnterGate and LeaveGate take and give back one place of st's bound on
// its lock-free purchases, for the external tests (package sqlstore_test,
// which opens its stores through sqltest).
func EnterGate(ctx context.Context, st *Store) error { return st.atomic.enter(ctx) }

// LeaveGate gives back a place EnterGate took.
func LeaveGate(st *Store) { st.atomic.leave() }
