#!/usr/bin/env bash
# readme (`make readme`): regenerates every measured block of README.md
# from real runs against the local stack (`make up`; DIR=.seckill), so the
# README's tables cannot drift from the tool:
#   demo     the table `make demo` prints: seckill bench --strategies all
#            --repeat 3 --seed 42
#   lessons  the course's verdicts: seckill lesson all
#   perf     scripts/perf.sh (also `make perf` alone)
# The strategy table comes from the registry (seckill strategies --markdown)
# and a test fails when it differs. Takes about 20 minutes on 2 cores; run
# it on an otherwise idle machine.
#   make readme [DIR=.seckill] [ONLY="demo lessons perf"]
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${DIR:-.seckill}
ONLY=${ONLY:-demo lessons perf}
BIN=bin/seckill
OUT=results/readme-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"

for part in $ONLY; do
	case $part in
	demo)
		began=$(date +%s)
		"$BIN" bench --dir "$DIR" --strategies all --repeat 3 --seed 42 --out "$OUT/demo" > "$OUT/demo.txt" || true
		wall=$(( $(date +%s) - began ))
		{
			echo "Printed by \`bin/seckill bench --strategies all --repeat 3 --seed 42\` (\`make readme\`, $(date -u +%Y-%m-%d), $(nproc) CPUs, $wall s; medians over 3 repeats in crossed order, min–max in parentheses; report in \`$OUT/demo/\`):"
			echo
			echo '```'
			cat "$OUT/demo.txt"
			echo '```'
		} > "$OUT/demo.md"
		scripts/readme-block.sh demo "$OUT/demo.md"
		;;
	lessons)
		began=$(date +%s)
		"$BIN" lesson all --dir "$DIR" > "$OUT/lessons.txt" || true
		wall=$(( $(date +%s) - began ))
		{
			echo "Printed by \`bin/seckill lesson all\` (\`make readme\`, $(date -u +%Y-%m-%d), $(nproc) CPUs, $wall s for the whole course):"
			echo
			echo '```'
			cat "$OUT/lessons.txt"
			echo '```'
		} > "$OUT/lessons.md"
		scripts/readme-block.sh lessons "$OUT/lessons.md"
		;;
	perf)
		DIR=$DIR scripts/perf.sh
		;;
	*)
		echo "readme: unknown part $part (demo, lessons, perf)" >&2
		exit 2
		;;
	esac
done
