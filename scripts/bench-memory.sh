#!/usr/bin/env bash
# bench-memory (`make bench-memory`): what the bench itself costs as a run
# grows. It starts a stack of its own (3 instances, every server, base port
# BASE), runs `seckill bench --strategies STRATEGY --requests N --stock N`
# for each N of SIZES under /usr/bin/time -v, one after the other, and
# reads each run's wall time, the bench process's peak resident memory
# (the kernel's maximum RSS), the time its checks took and whether every
# invariant, linearizability included, was decided (report.json). Stops
# the stack and rewrites the block "bench-memory" of docs/performance.md
# (scripts/readme-block.sh).
#   make bench-memory [SIZES="30000 100000 250000 1000000"] [MEM_STRATEGY=sql-atomic] [BASE=20400]
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${SIZES:-30000 100000 250000 1000000}
STRATEGY=${STRATEGY:-sql-atomic}
BASE=${BASE:-20400}
if [ ! -x /usr/bin/time ]; then
	echo "bench-memory: /usr/bin/time is missing: apt-get install time" >&2
	exit 1
fi
tmp=$(mktemp -d)
dir="$tmp/stack"
stop() {
	bin/seckill down --dir "$dir" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap stop EXIT
bin/seckill up --dir "$dir" --base-port "$BASE" --instances 3 >/dev/null
began=$(date +%s)
for n in $SIZES; do
	echo "bench-memory: $STRATEGY, $n requests on a stock of $n" >&2
	/usr/bin/time -v -o "$tmp/time-$n" bin/seckill bench --dir "$dir" --strategies "$STRATEGY" \
		--requests "$n" --stock "$n" --out "$tmp/out-$n" >"$tmp/log-$n"
done
wall=$(($(date +%s) - began))

block="$tmp/bench-memory.md"
{
	echo "Measured by \`make bench-memory SIZES=\"$SIZES\" MEM_STRATEGY=$STRATEGY\` on $(date -u +%Y-%m-%d) ($wall s):"
	echo "\`seckill bench --strategies $STRATEGY --requests N --stock N\`, one run each, 3 instances behind nginx, 50 clients,"
	echo "loopback (no round trip added), durability default; $(nproc) CPUs, the stack and the bench on the same machine."
	echo "RSS is the bench process's peak resident memory (/usr/bin/time's maximum RSS); checks are the history and"
	echo "lock-evidence checks of the run (report.json's checks_ms); decided counts the invariants not left undecided."
	echo
	echo '```'
	python3 - "$tmp" $SIZES <<'EOF'
import json, re, sys
tmp, sizes = sys.argv[1], [int(s) for s in sys.argv[2:]]
rows = []
for n in sizes:
    t = open(f"{tmp}/time-{n}").read()
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
    m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", t)
    wall = int(m.group(1) or 0) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
    run = json.load(open(f"{tmp}/out-{n}/report.json"))["runs"][0]
    invs = run["invariants"]
    undecided = [i["name"] for i in invs if i.get("undecided")]
    lin = next(i for i in invs if i["name"] == "linearizable")
    verdict = "undecided" if lin.get("undecided") else lin["detail"].split(":")[0]
    rows.append((n, wall, rss_kb / 1024, rss_kb * 1024 / n / 1024, run.get("checks_ms", 0), verdict,
                 f"{len(invs) - len(undecided)} of {len(invs)}"))
print(f"{'requests':>10} {'wall s':>8} {'bench RSS MB':>13} {'RSS KB/request':>15} {'checks ms':>10}  {'linearizability':<18} decided")
for r in rows:
    print(f"{r[0]:>10} {r[1]:>8.0f} {r[2]:>13.0f} {r[3]:>15.2f} {r[4]:>10.0f}  {r[5]:<18} {r[6]}")
base = next((r for r in rows if r[0] == 100000), rows[0])
top = rows[-1]
print()
print(f"RSS per request at {top[0]} over at {base[0]}: {top[3] / base[3]:.2f}")
EOF
	echo '```'
} >"$block"
cat "$block"
scripts/readme-block.sh bench-memory "$block"
