package stock

// The hooks of the external tests (package stock_test), which cannot be
// internal: they run the Service over sqlstore, which imports stock.

// QueuedFor counts the purchases queued for key in svc's batch queues.
func QueuedFor(svc *Service, key string) int {
	svc.batches.mu.Lock()
	defer svc.batches.mu.Unlock()
	n := 0
	for k, q := range svc.batches.queues {
		if k.key == key {
			n += len(q.pending)
		}
	}
	return n
}
