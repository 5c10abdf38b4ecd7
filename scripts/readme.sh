#!/usr/bin/env bash
# readme (`make readme`): regenerates every measured block of README.md
# and docs/ (each in the page that holds it: scripts/readme-block.sh) from
# real runs against the local stack (`make up`; DIR=.seckill), so the
# tables cannot drift from the tool:
#   demo     the table `make demo` prints: seckill bench --strategies all
#            --repeat 3 --seed 42 (blocks conclusion and demo in README.md,
#            demo-full in docs/bench.md)
#   lessons  the course's verdicts: seckill lesson all (block lessons in
#            README.md, lessons-full in docs/course.md)
#   handout  the workshop handout's expected figures (docs/workshop/en.md
#            and zh.md, workshop-* and workshop-zh-* blocks): each lesson
#            of its plan (HANDOUT_LESSONS) run once with seckill lesson N,
#            its wall time; each exercise's starter graded with seckill
#            grade EX --dir DIR (the checkout's exercises/ as committed:
#            run it on a clean checkout) and its answer key with --key
#   perf docs/performance.md's, rtt docs/rtt.md's and batch
#   docs/batching.md's. No header names a results/ directory: a clone has
#   none (results/ is not committed).
#   perf     scripts/perf.sh (also `make perf` alone)
#   rtt      a sweep over round trips on a stack of its own with the proxy
#            (RTT_DIR, base port RTT_PORT): seckill bench --sweep-rtt; and
#            on the same stack the batch sizes (--sweep-batch, block batch)
# The strategy table comes from the registry (seckill strategies --markdown)
# and a test fails when it differs. Takes about 20 minutes on 2 cores; run
# it on an otherwise idle machine.
#   make readme [DIR=.seckill] [ONLY="demo lessons perf rtt handout"]
set -euo pipefail
cd "$(dirname "$0")/.."

# demote prints a sweep's markdown without its command line, its headings
# one level down (the page's own are above them).
demote() { grep -v '^- command:' "$1" | sed -e 's/^## /#### /' -e 's/^# /### /'; }
DIR=${DIR:-.seckill}
ONLY=${ONLY:-demo lessons perf rtt handout}
HANDOUT_LESSONS=${HANDOUT_LESSONS:-1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 27 28}
RTT_DIR=${RTT_DIR:-.seckill-rtt}
RTT_PORT=${RTT_PORT:-19500}
BIN=bin/seckill
# DEMO_FLAGS: the flags of make demo's bench (the Makefile's DEMO_FLAGS).
DEMO_FLAGS=(--strategies all --repeat 3 --seed 42)
OUT=results/readme-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"

for part in $ONLY; do
	case $part in
	demo)
		# make demo's command (the Makefile's DEMO_FLAGS; a test keeps
		# the two the same). README.md gets the conclusion (block
		# conclusion) and the compact table (block demo, within 120
		# columns: seckill report --as compact); docs/bench.md every
		# column, as the bench printed it (block demo-full).
		began=$(date +%s)
		"$BIN" bench --dir "$DIR" "${DEMO_FLAGS[@]}" --out "$OUT/demo" > "$OUT/demo.txt" || true
		wall=$(( $(date +%s) - began ))
		day=$(date -u +%Y-%m-%d)
		"$BIN" report --as compact "$OUT/demo" > "$OUT/demo-compact.txt"
		"$BIN" report --as conclusion "$OUT/demo" > "$OUT/conclusion.txt"
		{
			echo "What \`bin/seckill bench ${DEMO_FLAGS[*]}\` (\`make demo\`'s command) found when"
			echo "\`make readme\` ran it ($day, $(nproc) CPUs), as the bench prints it under its table:"
			echo
			cat "$OUT/conclusion.txt"
		} > "$OUT/conclusion.md"
		{
			echo "Printed by \`bin/seckill bench ${DEMO_FLAGS[*]}\` (\`make demo\`'s command; \`make readme\`,"
			echo "$day, $(nproc) CPUs, $wall s): medians over 3 repeats in crossed order, in the columns a newcomer"
			echo "reads first (\`bin/seckill report --as compact\`); every column: [docs/bench.md](docs/bench.md#the-demo-run)."
			echo
			echo '```'
			cat "$OUT/demo-compact.txt"
			echo '```'
		} > "$OUT/demo.md"
		{
			echo "Printed by \`bin/seckill bench ${DEMO_FLAGS[*]}\` (\`make demo\`'s command; \`make readme\`,"
			echo "$day, $(nproc) CPUs, $wall s): medians over 3 repeats in crossed order, min–max in parentheses."
			echo
			echo '```'
			cat "$OUT/demo.txt"
			echo '```'
		} > "$OUT/demo-full.md"
		scripts/readme-block.sh conclusion "$OUT/conclusion.md"
		scripts/readme-block.sh demo "$OUT/demo.md"
		scripts/readme-block.sh demo-full "$OUT/demo-full.md"
		;;
	lessons)
		# Every figure of the header comes from this run: the wall time
		# and the counts from course.json, the file names from the
		# directory the course wrote. README.md gets the short summary
		# (block lessons, within 120 columns: seckill report --as
		# compact), docs/course.md the full one (block lessons-full).
		"$BIN" lesson all --dir "$DIR" --out "$OUT/course" > "$OUT/lessons.txt" || true
		"$BIN" report --as compact "$OUT/course" > "$OUT/lessons-short.txt"
		read -r n ran skipped wall < <(python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); o=c["outcomes"]; s=sum(x["verdict"]=="skipped" for x in o); print(len(o), len(o)-s, s, round(c["wall_s"]))' "$OUT/course/course.json")
		files=$(cd "$OUT/course" && ls course.* | paste -sd, - | sed 's/,/, /g')
		day=$(date -u +%Y-%m-%d)
		{
			echo "The verdicts of \`bin/seckill lesson all\` (\`make readme\`, $day, $(nproc) CPUs): $n lessons, $ran run"
			echo "and $skipped skipped on this stack, $wall s for the whole course; each lesson's deciding figure"
			echo "(\`bin/seckill report --as compact\`). The source's figure and ours in full, and what the course wrote:"
			echo "[docs/course.md](docs/course.md#the-readmes-run)."
			echo
			echo '```'
			cat "$OUT/lessons-short.txt"
			echo '```'
		} > "$OUT/lessons.md"
		{
			echo "Printed by \`bin/seckill lesson all\` (\`make readme\`, $day, $(nproc) CPUs): $n lessons, $ran run"
			echo "and $skipped skipped on this stack, $wall s for the whole course; it wrote $files"
			echo "(each lesson's charts, where to look, and links to its reports on course.html):"
			echo
			echo '```'
			cat "$OUT/lessons.txt"
			echo '```'
		} > "$OUT/lessons-full.md"
		scripts/readme-block.sh lessons "$OUT/lessons.md"
		scripts/readme-block.sh lessons-full "$OUT/lessons-full.md"
		;;
	perf)
		DIR=$DIR scripts/perf.sh
		;;
	rtt)
		up="$BIN up --dir $RTT_DIR --base-port $RTT_PORT --rtt loopback --instances 2 --backends redis,mysql,etcd,zookeeper --dashboard=false"
		sweep="$BIN bench --dir $RTT_DIR --strategies sql-atomic,mysql-forupdate,redis,etcd,zookeeper --requests 150 --sweep-rtt loopback,zone,cross-zone"
		$up > "$OUT/rtt-up.txt"
		began=$(date +%s)
		$sweep --out "$OUT/rtt" > "$OUT/rtt.txt" || true
		wall=$(( $(date +%s) - began ))
		# Batching where it pays: redis at batch 1, 8, 32, loopback and cross-zone.
		batch="$BIN bench --dir $RTT_DIR --strategies redis --requests 1000 --stock 2000 --concurrency 200 --sweep-rtt loopback,cross-zone --sweep-batch 1,8,32"
		began=$(date +%s)
		$batch --out "$OUT/batch" > "$OUT/batch.txt" || true
		bwall=$(( $(date +%s) - began ))
		"$BIN" down --dir "$RTT_DIR" > /dev/null
		{
			echo "Printed by \`$batch\` on the same stack"
			echo "(\`make readme\`, $(date -u +%Y-%m-%d), $(nproc) CPUs, $bwall s; 200 clients, one run per point):"
			echo
			demote "$OUT/batch.txt"
		} > "$OUT/batch.md"
		scripts/readme-block.sh batch "$OUT/batch.md"
		{
			echo "Printed by \`$sweep\`"
			echo "on a stack started with \`$up\`"
			echo "(\`make readme\`, $(date -u +%Y-%m-%d), $(nproc) CPUs, $wall s; 50 clients, one run per point):"
			echo
			demote "$OUT/rtt.txt"

		} > "$OUT/rtt.md"
		scripts/readme-block.sh rtt "$OUT/rtt.md"
		;;
	handout)
		# The figures come from the runs below, each in its own file
		# under $OUT/handout; scripts/handout.py frames them for en.md
		# and zh.md, then each block is written.
		H=$OUT/handout
		mkdir -p "$H"
		"$BIN" lesson list > "$H/list.txt"
		for n in $HANDOUT_LESSONS; do
			began=$(date +%s.%N)
			"$BIN" lesson "$n" --dir "$DIR" --out "$H/lesson-$n" > "$H/lesson-$n.txt" || true
			echo "$(date +%s.%N) - $began" | bc > "$H/lesson-$n.wall"
		done
		for ex in redislock watchdog fencing; do
			for who in starter key; do
				flag=; [ "$who" = key ] && flag=--key
				"$BIN" grade "$ex" $flag --dir "$DIR" > "$H/grade-$ex-$who.txt" || true
				report=$(sed -n 's/^报告 \/ report: //p' "$H/grade-$ex-$who.txt" | head -1)
				if [ -n "$report" ]; then cp "$report/grade.json" "$H/grade-$ex-$who.json"; fi
			done
		done
		HANDOUT_DATE=$(date -u +%Y-%m-%d) HANDOUT_CPUS=$(nproc) python3 scripts/handout.py "$H"
		for f in "$H"/blocks/*.md; do
			scripts/readme-block.sh "$(basename "$f" .md)" "$f"
		done
		;;
	*)
		echo "readme: unknown part $part (demo, lessons, perf, rtt, handout)" >&2
		exit 2
		;;
	esac
done
