// Package bench is the seckill benchmark harness: for each lock strategy it
// switches every instance of the fleet to that strategy, resets the goods,
// fires a bounded number of purchases through nginx with its own lean attacker (attack.go),
// audits the result from the admin API and /metrics (oversold units, lost
// updates, per-instance sales, outcomes, throughput, latency, lock wait),
// checks the correctness invariants, and writes report.json, report.md,
// report.html (offline, charts drawn as hand-written SVG by bench/chart) and the raw results
// of every run in vegeta's format.
//
// The package holds all the logic; `seckill bench` only maps flags to
// Options. It does not depend on the local stack: a fleet is described by
// Fleet, and re-scaling goes through the consumer-side Scaler interface.
package bench
