#!/usr/bin/env bash
# perf (`make perf`): docs/performance.md's measured block from one command,
# against the local stack (`make up`; DIR=.seckill):
#   1. the database ceiling (the purchase transaction straight at MariaDB)
#      and every correct strategy's sales per second as a fraction of it,
#      each distributed lock with and without the local queue, at 50
#      clients, in crossed rounds;
#   2. the scaling sweep 1, 10, 50, 200 clients of the locks and sql-atomic;
#   3. batching: redis with B = 1, 4, 16, 64 purchases per lock hold against
#      sql-atomic, at 200 clients;
#   4. the production answer at full load: sql-atomic, redis-atomic and
#      redis-stream (asynchronous orders), 5000 purchases each, 5 crossed
#      rounds (the host's speed moves between rounds), with where the CPU went;
#   5. an independent client: wrk through nginx against mariadb-slap
#      straight at MariaDB (scripts/independent-ceiling.sh, RUNS=5 times,
#      and their median);
#   6. the cost model's ratio of each lock at loopback and at a 2 ms round
#      trip, median and range of RUNS benches (scripts/perf-model.sh, on a
#      stack of its own with the proxy; docs/cost-model.md's block).
# Each step is one `seckill bench`; their tables go to the block
# "perf" (scripts/readme-block.sh) and the reports stay under results/perf-*/.
#   make perf [DIR=.seckill] [REPEAT=2] [ASYNC_REPEAT=5] [SEED=7] [RUNS=5]
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${DIR:-.seckill}
REPEAT=${REPEAT:-2}
SEED=${SEED:-7}
BIN=bin/seckill
OUT=results/perf-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
block="$OUT/readme-perf.md"
began=$(date +%s)

bench() { # NAME ARGS... : one bench into $OUT/NAME, its table into $OUT/NAME.txt
	local name=$1; shift
	echo "perf: $name: $BIN bench $*" >&2
	"$BIN" bench --dir "$DIR" --seed "$SEED" --out "$OUT/$name" "$@" > "$OUT/$name.txt"
}
locks=sql-atomic,mysql-forupdate,mysql-optimistic,mysql-unique,redis,redlock,zookeeper,etcd
bench compare --strategies correct --compare-queue --repeat "$REPEAT"
bench sweep --strategies "$locks" --sweep 1,10,50,200 --requests 400 --stock 400
for b in 1 4 16 64; do
	bench "batch-$b" --strategies sql-atomic,redis --batch "$b" --concurrency 200 --requests 2000 --stock 2000
done
ASYNC_REPEAT=${ASYNC_REPEAT:-5}
bench async --strategies sql-atomic,redis-atomic,redis-stream --requests 5000 --stock 5000 --concurrency 50 --repeat "$ASYNC_REPEAT"
python3 - "$OUT" > "$OUT/batch.txt" <<'PY'
import json, sys
out = sys.argv[1]
print("B    redis ok/s  sql-atomic ok/s  redis / sql-atomic")
for b in (1, 4, 16, 64):
    s = {x["strategy"]: x["ok_per_s"]["median"] for x in json.load(open(f"{out}/batch-{b}/report.json"))["summary"]}
    print(f"{b:<4} {s['redis']:>10.0f}  {s['sql-atomic']:>15.0f}  {s['redis'] / s['sql-atomic']:>18.2f}")
PY
python3 - "$OUT" >> "$OUT/async.txt" <<'PY'
import json, sys
r = json.load(open(f"{sys.argv[1]}/async/report.json"))
s = {x["strategy"]: x["ok_per_s"]["median"] for x in r["summary"]}
print(f"\nredis-stream / sql-atomic: {s['redis-stream'] / s['sql-atomic']:.2f} (medians of this bench's ok/s)")
for name in ("sql-atomic", "redis-stream"):
    rounds = ", ".join(f"{x['ok_per_s']:.0f}" for x in r["runs"] if x["strategy"] == name)
    print(f"{name} round by round: {rounds} ok/s")
PY
RUNS=${RUNS:-5}
if command -v wrk >/dev/null && command -v mariadb-slap >/dev/null; then
	for i in $(seq "$RUNS"); do
		echo "perf: independent $i of $RUNS: scripts/independent-ceiling.sh $DIR 5 50" >&2
		SECKILL=$BIN scripts/independent-ceiling.sh "$DIR" 5 50 > "$OUT/independent-$i.txt"
	done
	# One line per run, then the median fraction.
	for i in $(seq "$RUNS"); do
		awk -v i="$i" '/^wrk through/ {w = $(NF-1)} /^mariadb-slap/ {b = $(NF-5); a = $(NF-3); m = $NF} /^fraction/ {f = $NF}
			END {printf "%-4s %10s  %11s  %10s  %9s  %8s\n", i, w, b, a, m, f}' "$OUT/independent-$i.txt"
	done | { echo "run  wrk ok/s   slap before  slap after  slap mean  fraction"; sort -k1n; } > "$OUT/independent.txt"
	awk 'NR > 1 {print $6}' "$OUT/independent.txt" | sort -n | awk '{f[NR] = $1} END {m = NR % 2 ? f[(NR + 1) / 2] : (f[NR / 2] + f[NR / 2 + 1]) / 2; printf "\nmedian fraction of the ceiling: %.2f (%d runs)\n", m, NR}' >> "$OUT/independent.txt"
else
	echo "(not measured: wrk or mariadb-slap is not installed; apt install wrk mariadb-client)" > "$OUT/independent.txt"
fi
wall=$(( $(date +%s) - began ))
{
	echo "Measured by \`make perf\` on $(date -u +%Y-%m-%d) ($(nproc) CPUs, $wall s for the five steps)."
	echo
	echo "**1. The ceiling, each correct strategy's fraction of it, and the local queue** (\`seckill bench --strategies correct --compare-queue --repeat $REPEAT --seed $SEED\`: 500 purchases on a stock of 300, 50 clients, rounds in crossed order; medians, min–max in parentheses):"
	echo
	echo '```'
	cat "$OUT/compare.txt"
	echo '```'
	echo
	echo "**2. Scaling** (\`seckill bench --strategies $locks --sweep 1,10,50,200 --requests 400 --stock 400 --seed $SEED\`):"
	echo
	echo '```'
	sed -n '/^sweep:/,$p' "$OUT/sweep.txt" # the per-point rows repeat the sweep tables: $OUT/sweep.txt has them
	echo '```'
	echo
	echo "**3. Batching** (\`seckill bench --strategies sql-atomic,redis --batch B --concurrency 200 --requests 2000 --stock 2000 --seed $SEED\`, one bench per B, the ratio within each):"
	echo
	echo '```'
	cat "$OUT/batch.txt"
	echo '```'
	echo
	echo "**4. Asynchronous orders at full load** (\`seckill bench --strategies sql-atomic,redis-atomic,redis-stream --requests 5000 --stock 5000 --concurrency 50 --repeat $ASYNC_REPEAT --seed $SEED\`; medians of $ASYNC_REPEAT crossed rounds, each round listed under the table; the per-purchase CPU table says where the machine's CPU went):"
	echo
	echo '```'
	cat "$OUT/async.txt"
	echo '```'
	echo
	echo "**5. An independent client** (\`scripts/independent-ceiling.sh $DIR 5 50\`, $RUNS times: wrk with 50 connections through nginx on sql-atomic for 5 s, and mariadb-slap with 50 clients sending the same purchase straight at MariaDB before and after it (the mean of the two is the ceiling); neither is the bench. The fraction is wrk's purchases/s over the ceiling; the ceiling moves with the disk and the host, so the median over the runs is the figure):"
	echo
	echo '```'
	cat "$OUT/independent.txt"
	echo '```'
} > "$block"
scripts/readme-block.sh perf "$block"
RUNS=$RUNS SEED=$SEED scripts/perf-model.sh
