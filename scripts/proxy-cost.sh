#!/usr/bin/env bash
# proxy-cost: what the fault proxy costs the `redis` strategy. Two stacks
# of the same size, one direct (base 25000) and one with `--proxy` (base
# 25200), take turns running the same seeded closed-model `redis` bench
# REPEATS times; it prints each pair's ok/s, the median of the ratios
# proxied/direct, and the cost (1 - median).
#   make proxy-cost [REPEATS=5] [REQUESTS=1500] [CONCURRENCY=50]
set -euo pipefail
cd "$(dirname "$0")/.."
REPEATS=${REPEATS:-5}
REQUESTS=${REQUESTS:-1500}
CONCURRENCY=${CONCURRENCY:-50}
WORK=/tmp/seckill-proxy-cost
BIN=bin/seckill
mkdir -p "$WORK"
direct="$WORK/direct" proxied="$WORK/proxied"
cleanup() { "$BIN" down --dir "$direct" >/dev/null 2>&1 || true; "$BIN" down --dir "$proxied" >/dev/null 2>&1 || true; }
trap cleanup EXIT
"$BIN" up --dir "$direct" --base-port 25000 --instances 3 >/dev/null
"$BIN" up --dir "$proxied" --base-port 25200 --instances 3 --proxy >/dev/null
okps() { # DIR SEED -> ok/s of one seeded redis bench
	local out="$WORK/run-$(basename "$1")-$2"
	rm -rf "$out"
	"$BIN" bench --dir "$1" --strategies redis --requests "$REQUESTS" --stock "$REQUESTS" \
		--concurrency "$CONCURRENCY" --seed "$2" --calibrate-requests -1 --out "$out" >/dev/null 2>&1
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runs"][0]["ok_per_s"])' "$out/report.json"
}
ratios=()
for i in $(seq 1 "$REPEATS"); do
	# Alternate which stack goes first, so neither always runs warm.
	if (( i % 2 )); then d=$(okps "$direct" "$i"); p=$(okps "$proxied" "$i")
	else p=$(okps "$proxied" "$i"); d=$(okps "$direct" "$i"); fi
	r=$(python3 -c "print(f'{$p/$d:.3f}')")
	ratios+=("$r")
	printf 'repeat %d: direct %.1f ok/s, proxied %.1f ok/s, ratio %s\n' "$i" "$d" "$p" "$r"
done
python3 - "${ratios[@]}" <<'PY'
import statistics, sys
rs = sorted(float(x) for x in sys.argv[1:])
m = statistics.median(rs)
print(f"median proxied/direct {m:.3f} (range {rs[0]:.3f}-{rs[-1]:.3f}): the proxy costs {100*(1-m):.1f}% of redis throughput")
PY
