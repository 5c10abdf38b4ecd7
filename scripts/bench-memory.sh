#!/usr/bin/env bash
# bench-memory (`make bench-memory`): what the bench itself costs as a run
# grows. It starts a stack of its own (3 instances, every server, base port
# BASE), runs `seckill bench --strategies STRATEGY --requests N --stock N`
# for each N of SIZES, then for each N of LOCK_SIZES under LOCK_STRATEGY (a
# lock: its checks read every critical section's events too), under
# /usr/bin/time -v, one after the other, and
# reads each run's wall time, the bench process's peak resident memory
# (the kernel's maximum RSS), the time its checks took and whether every
# invariant, linearizability included, was decided (report.json). Stops
# the stack and rewrites the block "bench-memory" of docs/performance.md
# (scripts/readme-block.sh).
#   make bench-memory [SIZES="30000 100000 250000 1000000"] [MEM_STRATEGY=sql-atomic]
#                     [LOCK_SIZES="100000 250000"] [MEM_LOCK=redis] [BASE=20400]
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${SIZES:-30000 100000 250000 1000000}
STRATEGY=${STRATEGY:-sql-atomic}
LOCK_SIZES=${LOCK_SIZES-100000 250000}
LOCK_STRATEGY=${LOCK_STRATEGY:-redis}
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
rows=()
for n in $SIZES; do rows+=("$STRATEGY:$n"); done
for n in $LOCK_SIZES; do rows+=("$LOCK_STRATEGY:$n"); done
for row in "${rows[@]}"; do
	s=${row%:*} n=${row#*:}
	echo "bench-memory: $s, $n requests on a stock of $n" >&2
	# A lock sells a few hundred a second here: a run of its own timeout.
	/usr/bin/time -v -o "$tmp/time-$s-$n" bin/seckill bench --dir "$dir" --strategies "$s" \
		--requests "$n" --stock "$n" --run-timeout 40m --out "$tmp/out-$s-$n" >"$tmp/log-$s-$n"
done
wall=$(($(date +%s) - began))

block="$tmp/bench-memory.md"
{
	echo "Measured by \`make bench-memory SIZES=\"$SIZES\" MEM_STRATEGY=$STRATEGY LOCK_SIZES=\"$LOCK_SIZES\" MEM_LOCK=$LOCK_STRATEGY\` on $(date -u +%Y-%m-%d) ($wall s):"
	echo "\`seckill bench --strategies S --requests N --stock N --run-timeout 40m\`, one run each, 3 instances behind nginx, 50 clients,"
	echo "loopback (no round trip added), durability default; $(nproc) CPUs, the stack and the bench on the same machine."
	echo "RSS is the bench process's peak resident memory (/usr/bin/time's maximum RSS); checks are the history and"
	echo "lock-evidence checks of the run (report.json's checks_ms); decided counts the invariants not left undecided."
	echo
	echo '```'
	python3 - "$tmp" "$STRATEGY" "${rows[@]}" <<'EOF'
import json, re, sys
tmp, first = sys.argv[1], sys.argv[2]
rows = []
for row in sys.argv[3:]:
    s, n = row.rsplit(":", 1)
    n = int(n)
    t = open(f"{tmp}/time-{s}-{n}").read()
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
    m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", t)
    wall = int(m.group(1) or 0) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
    run = json.load(open(f"{tmp}/out-{s}-{n}/report.json"))["runs"][0]
    invs = run["invariants"]
    undecided = [i["name"] for i in invs if i.get("undecided")]
    lin = next(i for i in invs if i["name"] == "linearizable")
    verdict = "undecided" if lin.get("undecided") else lin["detail"].split(":")[0]
    mx = next((i for i in invs if i["name"] == "mutual_exclusion" and i.get("applicable")), None)
    rows.append((s, n, wall, rss_kb / 1024, rss_kb * 1024 / n / 1024, run.get("checks_ms", 0), verdict,
                 "-" if mx is None else "undecided" if mx.get("undecided") else "PASS" if mx["pass"] else "FAIL",
                 f"{len(invs) - len(undecided)} of {len(invs)}"))
print(f"{'strategy':<11} {'requests':>9} {'wall s':>7} {'bench RSS MB':>13} {'RSS KB/request':>15} {'checks ms':>10}  {'linearizability':<16} {'mutual excl.':<13} decided")
for r in rows:
    print(f"{r[0]:<11} {r[1]:>9} {r[2]:>7.0f} {r[3]:>13.0f} {r[4]:>15.2f} {r[5]:>10.0f}  {r[6]:<16} {r[7]:<13} {r[8]}")
mine = [r for r in rows if r[0] == first]
base = next((r for r in mine if r[1] == 100000), mine[0])
top = mine[-1]
print()
print(f"{first}: RSS per request at {top[1]} over at {base[1]}: {top[4] / base[4]:.2f}")
EOF
	echo '```'
} >"$block"
cat "$block"
scripts/readme-block.sh bench-memory "$block"
