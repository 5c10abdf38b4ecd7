#!/usr/bin/env bash
# proxy-cost: what the fault proxy costs the `redis` strategy. Two stacks
# of the same size, one direct (base 25000) and one with `--proxy` (base
# 25200), take turns running the same seeded closed-model `redis` bench
# REPEATS times; it prints each pair's ok/s, the median of the ratios
# proxied/direct, and the cost (1 - median). With RATE=N the load is an
# open model at N purchases/s instead (below saturation both stacks keep
# up, and the proxy shows as latency: p50 is printed too).
#   make proxy-cost [REPEATS=5] [REQUESTS=1500] [CONCURRENCY=50] [RATE=0]
set -euo pipefail
cd "$(dirname "$0")/.."
REPEATS=${REPEATS:-5}
REQUESTS=${REQUESTS:-1500}
CONCURRENCY=${CONCURRENCY:-50}
RATE=${RATE:-0}
WORK=/tmp/seckill-proxy-cost
BIN=bin/seckill
mkdir -p "$WORK"
direct="$WORK/direct" proxied="$WORK/proxied"
cleanup() { "$BIN" down --dir "$direct" >/dev/null 2>&1 || true; "$BIN" down --dir "$proxied" >/dev/null 2>&1 || true; }
trap cleanup EXIT
"$BIN" up --dir "$direct" --base-port 20000 --instances 3 >/dev/null
"$BIN" up --dir "$proxied" --base-port 20400 --instances 3 --proxy >/dev/null
okps() { # DIR SEED -> "ok/s p50_ms" of one seeded redis bench
	local out="$WORK/run-$(basename "$1")-$2"
	rm -rf "$out"
	"$BIN" bench --dir "$1" --strategies redis --requests "$REQUESTS" --stock "$REQUESTS" \
		--concurrency "$CONCURRENCY" --rate "$RATE" --seed "$2" --calibrate-requests -1 --out "$out" >/dev/null 2>&1
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["runs"][0]; print(r["ok_per_s"], r["latency_ms"]["p50"])' "$out/report.json"
}
ratios=()
for i in $(seq 1 "$REPEATS"); do
	# Alternate which stack goes first, so neither always runs warm.
	if (( i % 2 )); then d=$(okps "$direct" "$i"); p=$(okps "$proxied" "$i")
	else p=$(okps "$proxied" "$i"); d=$(okps "$direct" "$i"); fi
	read -r dok dp50 <<<"$d"
	read -r pok pp50 <<<"$p"
	r=$(python3 -c "print(f'{$pok/$dok:.3f}')")
	ratios+=("$r")
	printf 'repeat %d: direct %.1f ok/s (p50 %.1f ms), proxied %.1f ok/s (p50 %.1f ms), ratio %s\n' "$i" "$dok" "$dp50" "$pok" "$pp50" "$r"
done
python3 - "${ratios[@]}" <<'PY'
import statistics, sys
rs = sorted(float(x) for x in sys.argv[1:])
m = statistics.median(rs)
print(f"median proxied/direct {m:.3f} (range {rs[0]:.3f}-{rs[-1]:.3f}): the proxy costs {100*(1-m):.1f}% of redis throughput")
PY
