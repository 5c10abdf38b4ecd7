#!/usr/bin/env bash
# scripts/nemesis.sh (`make nemesis`): nemesis runs on the ha topology with
# the fault proxy (`seckill nemesis`), one after the other: for each entry
# of NEMESIS_RUNS a steady load under that strategy for NEMESIS_FOR
# (default 10m) while faults drawn from NEMESIS_SEED (default 1) kill,
# pause, cut and fail over its servers, links and instances. An entry is
# STRATEGY, with fencing where the strategy has tokens, or STRATEGY:MODE:
# fsync (on a stack started with --durability fsync), holder (fencing and
# --pause-holder: each pause of an instance pauses the lock's holder past
# its TTL) or unfenced (--pause-holder without fencing: what fencing
# buys). The stacks are the script's own (NEMESIS_DIR, NEMESIS_BASE_PORT),
# one per durability, stopped at the end. Each run's report goes to
# results/nemesis-<timestamp>/N-ENTRY/; the summary of all of them
# replaces the nemesis block (docs/reliability.md). It exits 1 when a run
# that should hold failed (any but redis-stream at the default durability
# and the unfenced ones). NEMESIS_FROM="DIR ..." runs nothing and writes
# the block from those directories' runs (their runs.txt), in order, so
# runs of several invocations (10-minute ones, an hour) share one block.
#   make nemesis [NEMESIS_RUNS="redis etcd ..."] [NEMESIS_FOR=10m] [NEMESIS_SEED=1]
set -euo pipefail
cd "$(dirname "$0")/.."

NEMESIS_DIR=${NEMESIS_DIR:-.seckill-nemesis}
NEMESIS_BASE_PORT=${NEMESIS_BASE_PORT:-19500}
NEMESIS_RUNS=${NEMESIS_RUNS:-redis etcd zookeeper consul redlock mysql-forupdate sql-atomic redis-stream redis-stream:fsync redis:holder redis:unfenced}
NEMESIS_FOR=${NEMESIS_FOR:-10m}
NEMESIS_SEED=${NEMESIS_SEED:-1}
OUT=${NEMESIS_OUT:-results/nemesis-$(date +%Y%m%d-%H%M%S)}

tokens() { [ "$(bin/seckill strategies | awk -v s="$1" '$1 == s { print $4 }')" = yes ]; }
durability=""
up() { # DURABILITY: the stack at that durability (restarted when it differs)
	if [ "$durability" = "$1" ]; then return; fi
	bin/seckill down --dir "$NEMESIS_DIR" >/dev/null
	bin/seckill up --dir "$NEMESIS_DIR" --base-port "$NEMESIS_BASE_PORT" --topology ha --proxy --instances 3 --durability "$1" >/dev/null
	durability=$1
}
began=$(date +%s)
status=0
block=$(mktemp)
trap 'rm -f "$block"' EXIT
i=0
if [ -n "${NEMESIS_FROM:-}" ]; then
	NEMESIS_RUNS="" # the block again from the runs in $NEMESIS_FROM
	read -r -a sources <<< "$NEMESIS_FROM"
else
	sources=("$OUT")
	mkdir -p "$OUT"
	bin/seckill down --dir "$NEMESIS_DIR" >/dev/null
	trap 'rm -f "$block"; bin/seckill down --dir "$NEMESIS_DIR" >/dev/null || true' EXIT
	echo "$NEMESIS_FOR $NEMESIS_SEED $began $(git rev-parse --short HEAD)" > "$OUT/runs.txt.head"
	: > "$OUT/runs.txt"
fi
for entry in $NEMESIS_RUNS; do
	i=$((i + 1))
	strategy=${entry%%:*} mode=""
	[ "$entry" != "$strategy" ] && mode=${entry#*:}
	flags=()
	if [ "$mode" != unfenced ] && tokens "$strategy"; then flags=(--fencing); fi
	if [ "$mode" = unfenced ] || [ "$mode" = holder ]; then flags+=(--pause-holder); fi
	up "$([ "$mode" = fsync ] && echo fsync || echo default)"
	dir="$OUT/$i-${entry/:/-}"
	echo "nemesis: $entry: bin/seckill nemesis --strategy $strategy ${flags[*]} --for $NEMESIS_FOR --seed $NEMESIS_SEED (durability $durability)" >&2
	if ! bin/seckill nemesis --dir "$NEMESIS_DIR" --strategy "$strategy" ${flags[@]+"${flags[@]}"} --for "$NEMESIS_FOR" \
		--seed "$NEMESIS_SEED" --out "$dir" > "$dir.txt" 2>&1; then
		# An unfenced run is there to fail; redis-stream at the default
		# durability may lose accepted sales to a failover (counted).
		if [ "$mode" != unfenced ] && [ "$entry" != redis-stream ]; then status=1; fi
	fi
	echo "$entry=$durability=$dir" >> "$OUT/runs.txt"
done
{
	echo "Printed by \`scripts/nemesis.sh\` (\`make nemesis\`, $(date -u +%Y-%m-%d)): one \`seckill nemesis --strategy S [--fencing] [--pause-holder] --for T --seed N\`"
	echo "per row, on an ha stack of its own with the fault proxy (3 instances, 40 purchases/s, a fault every 15 s on average, careful clients"
	echo "resending up to 20 times); the reports and charts stay on the machine that ran them (not committed). The runs came from:"
	echo
	python3 - "${sources[@]}" <<'PY'
import datetime, json, os, statistics, sys

def load(src):
    with open(f"{src}/runs.txt.head") as f:
        every, seed, began, *commit = f.read().split()
    ended = int(os.stat(f"{src}/runs.txt").st_mtime)
    with open(f"{src}/runs.txt") as f:
        runs = [l.strip().split("=", 2) for l in f if l.strip()]
    return {"src": src, "for": every, "seed": seed, "began": int(began), "ended": ended, "runs": runs,
            "commit": commit[0] if commit else "unrecorded"}

sources = [load(s) for s in sys.argv[1:]]
hhmm = lambda t: datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%H:%M")
for i, s in enumerate(sources):
    beside = [f"{j + 1}" for j, o in enumerate(sources) if o is not s and o["began"] < s["ended"] and s["began"] < o["ended"]]
    note = f"; it ran while {' and '.join(beside)} ran (each run keeps about a fifth of the 2 CPUs busy)" if beside else ""
    print(f"{i + 1}. `NEMESIS_FOR={s['for']} NEMESIS_SEED={s['seed']}` at commit {s['commit']}, {'1 run' if len(s['runs']) == 1 else str(len(s['runs'])) + ' runs one after the other'}, "
          f"{hhmm(s['began'])} to {hhmm(s['ended'])} UTC ({s['ended'] - s['began']} s){note}")
print()
print("| strategy | fencing | durability | for | faults (kinds) | on its servers | purchases | sales | oversold | lost updates | resent | unanswered | invariants | longest gap s | verdict |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
notes = []
for s in sources:
    for entry, durability, d in s["runs"]:
        try:
            r = json.load(open(f"{d}/nemesis.json"))
        except OSError:
            # The run stopped before its report: its log's last line says why.
            lines = [l.strip() for l in open(f"{d}.txt") if l.strip()]
            why = lines[-1].replace("seckill: nemesis: ", "") if lines else "no log"
            print(f"| {entry} | | {durability} | {s['for']} | | | | | | | | | | | FAILED, no report: {why} |")
            continue
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(r["kinds"].items()))
        fails = r.get("failures") or []
        invs = {i["name"]: i for i in r["invariants"]}
        # A check an instance's kill -9 left without its evidence (nemesis.Unchecked);
        # runs made before bench.Invariant had `incomplete` say so in the detail only.
        unchecked = [i["name"] for i in r["invariants"] if i.get("applicable") and not i["pass"] and not i.get("undecided")
                     and (i.get("incomplete") or "evidence is incomplete" in i.get("detail", ""))]
        # Sections that overlapped under fencing: the data checks decide (nemesis.Result.Fenced);
        # runs made before it counted them in their failures.
        mx = invs.get("mutual_exclusion", {})
        fenced = r["fencing"] and mx.get("applicable") and not mx.get("pass") and not mx.get("undecided") and "mutual_exclusion" not in unchecked
        if fenced:
            fails = [f for f in fails if not f.startswith("mutual_exclusion:")]
        notes_inv = [f"{', '.join(unchecked)} not checked"] if unchecked else []
        if fenced:
            notes_inv.append(f"mutual_exclusion broken, fenced: {r['outcomes'].get('stale_lock', 0)} stale writes refused")
        decided = f"{r['invariants_passed']}/{r['invariants_decided']} passed" + (f" ({'; '.join(notes_inv)})" if notes_inv else "")
        lost = invs.get("no_lost_update", {}).get("count", 0)
        fencing = ("yes" if r["fencing"] else "no") + (", holder paused" if r.get("pause_holder") else "")
        verdict = "ok" if not fails else "FAILED: " + "; ".join(f[:160] for f in fails)
        print(f"| {r['strategy']} | {fencing} | {durability} | {r['for']} | {r['made']} ({kinds}) | {r['needed_made']} | "
              f"{r['requests']} | {r['ok']} | {r['oversold']} | {lost} | {r['resent']} | {r['unanswered']} | {decided} | "
              f"{r['longest_gap_without_sale_s']:.1f} | {verdict} |")
        gaps = {}
        for f in r["faults"]:
            if f.get("made"):
                gaps.setdefault(f["kind"], []).append(f.get("sales_gap_s", 0))
        line = f"- {entry} ({r['for']}): sales gap by fault kind, median (max) s: " + \
            ", ".join(f"{k} {statistics.median(v):.1f} ({max(v):.1f})" for k, v in sorted(gaps.items()))
        try:
            q = json.load(open(f"{d}/bench/report.json"))["runs"][0].get("queue")
        except (OSError, KeyError, IndexError):
            q = None
        if q:
            line += (f"; order queue: Redis counted {q['accepted']} accepted and {q['written']} written "
                     f"({q['duplicates']} delivered again, {q['rejected']} rejected) for {r['ok']} sales answered")
        notes.append(line)
print()
print("\n".join(notes))
PY
} > "$block"
scripts/readme-block.sh nemesis "$block"
exit "$status"
