#!/usr/bin/env bash
# scripts/dry-run.sh (`make dry-run`): the students' path of the workshop
# handout, timed step by step, for STUDENTS students at once (default 3),
# as an instructor's dry run takes it. Each student, in parallel:
#   clone     git clone of this checkout's HEAD (a fresh clone each)
#   build     make build in the clone
#   lab       bin/seckill lab new NAME --for all (a registry of the
#             run's own, ports LAB_PORT_MIN..LAB_PORT_MAX)
#   starter   bin/seckill grade redislock: the untouched starter (fails)
#   answer    the right answer copied into exercises/redislock/lock.go
#             (the grader's fixture), then the same grade (passes)
# The grades of all students run at the same moment (each waits for the
# others' labs before its first grade), as in a class. Every lab is
# removed at the end. Its summary replaces the blocks workshop-dry-run
# (docs/workshop/en.md) and workshop-zh-dry-run (zh.md). The servers must
# be installed (make deps); about 5 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

STUDENTS=${STUDENTS:-3}
LAB_PORT_MIN=${LAB_PORT_MIN:-10000}
LAB_PORT_MAX=${LAB_PORT_MAX:-13999}
OUT=${DRY_RUN_OUT:-results/dry-run-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
ORIGIN=$(pwd)
ANSWER=$ORIGIN/internal/grade/answers/testdata/answers/redislock/right/lock.go
export SECKILL_LAB_REGISTRY=$OUT/registry
load=$(cut -d' ' -f1-3 /proc/loadavg)
began=$(date +%s)

pids=()
cleanup() {
	for n in $(seq 1 "$STUDENTS"); do
		[ -x "$OUT/s$n/bin/seckill" ] && "$OUT/s$n/bin/seckill" lab rm "student-$n" --purge > /dev/null 2>&1 || true
		rm -rf "$OUT/s$n" # the clone (its Go files would count in the checkout's gofmt and vet)
	done
}
trap cleanup EXIT

# step N NAME CMD...: runs CMD in student N's clone (the clone step in
# $OUT), appends "NAME wall_s exit score" to its times file, its output to
# its log; returns CMD's exit status.
step() {
	local n=$1 name=$2
	shift 2
	local t0 t1 rc=0 score=- wd=$OUT/s$n
	[ "$name" = clone ] && wd=$OUT
	t0=$(date +%s.%N)
	(cd "$wd" && "$@") > "$OUT/s$n-$name.log" 2>&1 || rc=$?
	t1=$(date +%s.%N)
	score=$(grep -oE '[0-9]+/[0-9]+ 项通过' "$OUT/s$n-$name.log" | tail -1 | cut -d' ' -f1 || true)
	echo "$name $(echo "$t1 - $t0" | bc) $rc ${score:--}" >> "$OUT/s$n.times"
	return "$rc"
}

# barrier NAME: waits until every student has written NAME's line.
barrier() {
	local name=$1 n
	for n in $(seq 1 "$STUDENTS"); do
		until grep -q "^$name " "$OUT/s$n.times" 2> /dev/null; do sleep 0.2; done
	done
}

student() {
	local n=$1 dir=$OUT/labs/student-$1
	# A failed setup step ends the run: its log says why.
	step "$n" clone git clone -q "$ORIGIN" "$OUT/s$n" || exit 1
	step "$n" build make -s build || exit 1
	step "$n" lab bin/seckill lab new "student-$n" --for all --dir "$dir" --port-min "$LAB_PORT_MIN" --port-max "$LAB_PORT_MAX" || exit 1
	barrier lab
	step "$n" starter bin/seckill grade redislock --dir "$dir" || true
	cp "$ANSWER" "$OUT/s$n/exercises/redislock/lock.go"
	barrier starter
	step "$n" answer bin/seckill grade redislock --dir "$dir" || true
}

for n in $(seq 1 "$STUDENTS"); do
	# git clone wants the directory absent; the times file sits beside it.
	: > "$OUT/s$n.times"
	student "$n" &
	pids+=($!)
done
for p in "${pids[@]}"; do
	wait "$p" || { echo "dry-run: a student's setup failed; see $OUT/s*-*.log" >&2; exit 1; }
done
wall=$(( $(date +%s) - began ))

python3 - "$OUT" "$STUDENTS" "$wall" "$load" "$(nproc)" "$(date -u +%Y-%m-%d)" <<'EOF'
import os, statistics, sys
out, students, wall, load, cpus, day = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**30  # as free -g
steps = [
    ("clone", "`git clone REPO seckill`", "克隆"),
    ("build", "`make build`", "构建"),
    ("lab", "`bin/seckill lab new NAME --for all`", "创建实验环境"),
    ("starter", "`bin/seckill grade redislock` (the starter)", "评分（初始代码）"),
    ("answer", "`bin/seckill grade redislock` (a right answer)", "评分（正确答案）"),
]
rows = {}
for n in range(1, students + 1):
    for line in open(os.path.join(out, f"s{n}.times")):
        name, secs, rc, score = line.split()
        rows.setdefault(name, []).append((float(secs), int(rc), score))
def cell(name):
    r = rows.get(name, [])
    if not r:
        return "-", "-", "-"
    s = sorted(x[0] for x in r)
    scores = ", ".join(sorted({x[2] for x in r if x[2] != "-"})) or "-"
    failed = sum(1 for x in r if x[1] != 0)
    return f"{statistics.median(s):.1f} ({s[0]:.1f}–{s[-1]:.1f})", scores, failed
# Each language's block: its name, header, table head, step label and note.
texts = {
    "workshop-dry-run": (
        f"Printed by `scripts/dry-run.sh` (`make dry-run`, STUDENTS={students}, {day}) on {cpus} CPUs, {mem} GiB, load average {load} at the start: {students} students at once, each in a fresh clone, their grades at the same moment; {wall} s in all.",
        "| step | seconds, median (min–max) | score | exit ≠ 0 |",
        lambda en, zh: en,
        "A grade exits 1 while a check fails: the starter's non-zero exits are expected, the right answer's are not."),
    "workshop-zh-dry-run": (
        f"由 `scripts/dry-run.sh`（`make dry-run`，STUDENTS={students}，{day}）在 {cpus} 个 CPU、{mem} GiB 的机器上生成，开始时负载 {load}：{students} 名学生同时进行，各用一份新克隆，评分同时开始；共 {wall} 秒。",
        "| 步骤 | 秒，中位数（最小–最大） | 得分 | 非零退出 |",
        lambda en, zh: f"{zh}：{en}",
        "有检查未通过时评分以 1 退出：初始代码的非零退出是预期的，正确答案不应有。"),
}
for block, (header, head, label, note) in texts.items():
    with open(os.path.join(out, block + ".md"), "w") as f:
        f.write(f"{header}\n\n{head}\n| --- | ---: | --- | ---: |\n")
        for name, en, zh in steps:
            t, sc, failed = cell(name)
            f.write(f"| {label(en, zh)} | {t} | {sc} | {failed} |\n")
        f.write(f"\n{note}\n")
EOF
scripts/readme-block.sh workshop-dry-run "$OUT/workshop-dry-run.md"
scripts/readme-block.sh workshop-zh-dry-run "$OUT/workshop-zh-dry-run.md"
