package stock

import "errors"

// Purchase outcomes other than success. Compare with errors.Is.
var (
	// ErrSoldOut: the stock does not cover qty.
	ErrSoldOut = errors.New("sold_out")
	// ErrStaleLock: fencing rejected the write of a holder whose token is
	// older than one already accepted.
	ErrStaleLock = errors.New("stale_lock")
	// ErrLeaseLost: the lock's backend reported the holder's lease lost
	// (expired, session ended) before the purchase committed; it was
	// rolled back (unless Config.NoLeaseCheck).
	ErrLeaseLost = errors.New("lease_lost")
	// ErrLockTimeout: the lock wait budget ran out (or optimistic retries
	// were exhausted).
	ErrLockTimeout = errors.New("lock_timeout")
	// ErrBackendUnavailable: a lock server or MySQL did not answer.
	ErrBackendUnavailable = errors.New("backend_unavailable")
	// ErrGoodsNotFound: no goods with that id.
	ErrGoodsNotFound = errors.New("goods_not_found")
	// ErrIdempotencyKeyReused: the Idempotency-Key was already sold for a
	// different purchase (goods, qty or user); nothing was changed.
	ErrIdempotencyKeyReused = errors.New("idempotency_key_reused")
	// ErrInvalid: the request itself is invalid (qty out of range, ...).
	ErrInvalid = errors.New("invalid_request")
)
