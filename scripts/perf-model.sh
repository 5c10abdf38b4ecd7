#!/usr/bin/env bash
# perf-model (`make perf-model`, and `make perf`'s last step): the cost
# model's ratio (measured ok/s over the model's serial limit) of each lock
# and of sql-atomic, at loopback and at a 2 ms round trip, as the median and
# the range of RUNS (3) benches: one bench is too noisy to tell 0.77 from
# 0.83. On a stack of its own with the fault proxy (MODEL_DIR, base port
# MODEL_PORT), stopped at the end. Each bench is
#   seckill bench --strategies S --requests N --stock N --sweep-rtt loopback,2 --seed K
# with K = SEED, SEED+1, ...; its reports stay under results/perf-model-*/.
# The table goes to docs/cost-model.md's block cost-model-repeats.
#   make perf-model [RUNS=5] [SEED=7] [MODEL_REQUESTS=200]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=bin/seckill
RUNS=${RUNS:-5}
SEED=${SEED:-7}
REQUESTS=${MODEL_REQUESTS:-200}
MODEL_DIR=${MODEL_DIR:-.seckill-model}
MODEL_PORT=${MODEL_PORT:-19700}
STRATEGIES=${MODEL_STRATEGIES:-redis,redlock,etcd,zookeeper,consul}
OUT=${MODEL_OUT:-results/perf-model-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"

up="$BIN up --dir $MODEL_DIR --base-port $MODEL_PORT --rtt loopback --instances 3 --backends redis,mysql,etcd,zookeeper,consul --dashboard=false"
"$BIN" down --dir "$MODEL_DIR" > /dev/null
trap '"$BIN" down --dir "$MODEL_DIR" > /dev/null || true' EXIT
$up > "$OUT/up.txt"
began=$(date +%s)
for i in $(seq "$RUNS"); do
	seed=$((SEED + i - 1))
	echo "perf-model: run $i of $RUNS: $BIN bench --strategies $STRATEGIES --requests $REQUESTS --stock $REQUESTS --sweep-rtt loopback,2 --seed $seed" >&2
	"$BIN" bench --dir "$MODEL_DIR" --strategies "$STRATEGIES" --requests "$REQUESTS" --stock "$REQUESTS" \
		--sweep-rtt loopback,2 --seed "$seed" --out "$OUT/run-$i" > "$OUT/run-$i.txt"
done
wall=$(( $(date +%s) - began ))
python3 - "$OUT" "$RUNS" "$STRATEGIES" > "$OUT/table.txt" <<'PY'
import json, statistics, sys
out, runs, strategies = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
points = (("rtt-1", "loopback"), ("rtt-2", "2 ms"))
ratio = {}  # (point, strategy) -> [ratio per run]
okps = {}   # (point, strategy) -> [ok/s per run]
rtt = {}    # point -> [measured round trip ms per run]
for i in range(1, runs + 1):
    for d, label in points:
        r = json.load(open(f"{out}/run-{i}/{d}/report.json"))
        rtt.setdefault(label, []).append(r["cost_model"]["rtt_ms"])
        for row in r["cost_model"]["rows"]:
            okps.setdefault((label, row["strategy"]), []).append(row["measured_ok_per_s"])
            if row.get("ratio") is not None:
                ratio.setdefault((label, row["strategy"]), []).append(row["ratio"])
def cell(xs, fmt):
    if len(xs) < runs:
        return f"{'(no model)':>18}"
    return f"{fmt(statistics.median(xs))} ({fmt(min(xs))}-{fmt(max(xs))})".rjust(18)
ratio_of = lambda x: f"{x:.2f}"
ok_of = lambda x: f"{x:.0f}"
print(f"{'strategy':<12}" + "".join(f"{'ratio at ' + label:>18}" for _, label in points) + "".join(f"{'ok/s at ' + label:>18}" for _, label in points))
for s in strategies:
    print(f"{s:<12}" + "".join(cell(ratio.get((label, s), []), ratio_of) for _, label in points) + "".join(cell(okps.get((label, s), []), ok_of) for _, label in points))
print()
print("measured round trip (ms), run by run: " + "; ".join(f"{label}: " + ", ".join(f"{x:.3f}" for x in rtt[label]) for _, label in points))
PY
{
	echo "Measured by \`make perf-model\` (scripts/perf-model.sh) on $(date -u +%Y-%m-%d): $RUNS benches of"
	echo "\`seckill bench --strategies $STRATEGIES --requests $REQUESTS --stock $REQUESTS --sweep-rtt loopback,2 --seed K\`"
	echo "(K = $SEED to $((SEED + RUNS - 1))) on a stack started with \`$up\`;"
	echo "3 instances, 50 clients, durability default, $(nproc) CPUs, $wall s. Each cell is the median of the"
	echo "benches' figures, their range in parentheses (ratio: the strategy's ok/s over the model's serial limit):"
	echo
	echo '```'
	cat "$OUT/table.txt"
	echo '```'
} > "$OUT/block.md"
scripts/readme-block.sh cost-model-repeats "$OUT/block.md"
