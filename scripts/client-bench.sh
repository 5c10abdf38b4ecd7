#!/usr/bin/env bash
# client-bench (`make client-bench`): the bench's hand-written HTTP/1.1
# client (bench/transport.go) against fasthttp's HostClient, behind the
# same workers and against the same null server on loopback: the
# benchmarks BenchmarkCalibrate and BenchmarkCalibrateFasthttp of one
# compiled test binary, in PAIRS pairs whose order alternates (ours first
# in odd pairs, fasthttp first in even ones), each run BENCHTIME
# calibrations of the bench's defaults. The figures are the medians over
# the pairs of ours' req/s over fasthttp's and of ours' CPU time per request
# over fasthttp's, with their ranges: a ratio within a pair cancels the
# machine's drift between pairs. Rewrites the block
# "client-bench" of docs/performance.md (scripts/readme-block.sh).
#   make client-bench [PAIRS=15] [BENCHTIME=20x] [GOMAXPROCS=...]
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
PAIRS=${PAIRS:-15}
BENCHTIME=${BENCHTIME:-20x}
procs=${GOMAXPROCS:-$(nproc)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$GO" test -c -o "$tmp/bench.test" ./bench

run() { # BENCHMARK: its req/s and its CPU µs per request
	GOMAXPROCS=$procs "$tmp/bench.test" -test.run '^$' -test.bench "^$1\$" -test.benchtime "$BENCHTIME" |
		awk '/^Benchmark/ {for (i = 2; i <= NF; i++) {if ($i == "req/s") r = $(i-1); if ($i == "cpu-us/req") c = $(i-1)}}
			END {if (r == "" || c == "") exit 1; print r, c}'
}
began=$(date +%s)
for i in $(seq "$PAIRS"); do
	if ((i % 2)); then
		ours=$(run BenchmarkCalibrate)
		fast=$(run BenchmarkCalibrateFasthttp)
	else
		fast=$(run BenchmarkCalibrateFasthttp)
		ours=$(run BenchmarkCalibrate)
	fi
	echo "client-bench: pair $i of $PAIRS: ours $ours, fasthttp $fast (req/s, CPU µs per request)" >&2
	echo "$i $ours $fast" >> "$tmp/pairs"
done
wall=$(( $(date +%s) - began ))

fasthttp=$("$GO" list -m -f '{{.Path}} {{.Version}}' github.com/valyala/fasthttp)
requests=$(sed -n 's/^\tDefaultCalibrateRequests *= *\([0-9]*\).*/\1/p' bench/options.go)
workers=$(sed -n 's/^\tDefaultConcurrency *= *\([0-9]*\).*/\1/p' bench/options.go)
case $BENCHTIME in
*x) runs="${BENCHTIME%x} calibrations" ;;
*) runs="calibrations for $BENCHTIME" ;;
esac
block="$tmp/client-bench.md"
{
	echo "Measured by \`make client-bench PAIRS=$PAIRS BENCHTIME=$BENCHTIME\` on $(date -u +%Y-%m-%d) ($wall s): $PAIRS pairs, in alternating order, of"
	echo "\`go test ./bench -run '^\$' -bench '^BenchmarkCalibrate(Fasthttp)?\$' -benchtime $BENCHTIME\`: each run $runs of"
	echo "$requests purchases by $workers workers (closed model) at the null server on loopback (127.0.0.1), in one process;"
	echo "$(nproc) CPUs, shared with whatever else the machine ran; GOMAXPROCS=$procs; $("$GO" env GOVERSION); $fasthttp."
	echo "req/s is the calibration's ceiling; CPU µs is the process's user and system time per request (generator and null server)."
	echo
	echo '```'
	awk '
		function median(a, n,   i, j, t) {
			for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		function summary(what, a, n,   i, lo, hi) {
			lo = hi = a[1]
			for (i = 2; i <= n; i++) { lo = a[i] < lo ? a[i] : lo; hi = a[i] > hi ? a[i] : hi }
			printf "%s: median %.2f (range %.2f–%.2f) over %d pairs\n", what, median(a, n), lo, hi, n
		}
		BEGIN {
			printf "%-5s %11s %15s %12s   %14s %18s %12s\n", "pair", "ours req/s", "fasthttp req/s", "ours / fast", "ours CPU µs", "fasthttp CPU µs", "ours / fast"
		}
		{
			r[NR] = $2 / $4; c[NR] = $3 / $5
			printf "%-5s %11.0f %15.0f %12.2f   %14.1f %18.1f %12.2f\n", $1, $2, $4, r[NR], $3, $5, c[NR]
		}
		END {
			print ""
			summary("req/s, ours / fasthttp (above 1: ours serves more)", r, NR)
			summary("CPU µs per request, ours / fasthttp (below 1: ours takes less)", c, NR)
		}' "$tmp/pairs"
	echo '```'
} > "$block"
scripts/readme-block.sh client-bench "$block"
