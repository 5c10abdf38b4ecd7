#!/usr/bin/env bash
# curator-bench (`make curator-bench`): the sources' own ZooKeeper recipe,
# Apache Curator's InterProcessMutex in a Java service
# (examples/curator), under the lab's bench beside the lab's zookeeper
# strategy, in one report: the bench loads and audits the Java service
# through the service contract alone (docs/contract.md), locked and
# --no-lock, and the lab's own instances as usual. It starts a stack of
# its own (outside the test suite's ports, so make test can run beside
# it) and the Java instances against that stack's ZooKeeper and MariaDB,
# runs REPEAT rounds, stops everything it started, and rewrites the block
# "curator" of docs/sources.md (scripts/readme-block.sh).
#   make curator-bench [REPEAT=3] [REQUESTS=500] [STOCK=300] [CONCURRENCY=50]
set -euo pipefail
cd "$(dirname "$0")/.."
REPEAT=${REPEAT:-3}
REQUESTS=${REQUESTS:-500}
STOCK=${STOCK:-300}
CONCURRENCY=${CONCURRENCY:-50}
dir=.seckill-curator-bench
# The Java instances: locked on java+1.., their nginx on java; --no-lock
# on java+51.., their nginx on java+50 (run.sh). Beside the stack's
# 20800-21150, below the test suite's ports.
java=21160
out=results/curator-$(date -u +%Y%m%d-%H%M%S)
tmp=$(mktemp -d)
stop() {
	examples/curator/run.sh stop --dir "$dir/curator" >/dev/null 2>&1 || true
	bin/seckill down --dir "$dir" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap stop EXIT
bin/seckill down --dir "$dir" >/dev/null 2>&1 || true
# Two Go instances and two Java ones of each kind, each kind behind an
# nginx of its own, on the same ZooKeeper and MariaDB.
bin/seckill up --dir "$dir" --base-port 20800 --instances 2 --backends zookeeper,mysql
# shellcheck disable=SC1091
source "$dir/env.sh"
examples/curator/run.sh start --dir "$dir/curator" --base-port "$java" --instances 2
bin/seckill bench --dir "$dir" --strategies zookeeper \
	--service curator=http://127.0.0.1:$java --service curator-no-lock=http://127.0.0.1:$((java + 50)) --unprotected curator-no-lock \
	--repeat "$REPEAT" --requests "$REQUESTS" --stock "$STOCK" --concurrency "$CONCURRENCY" --out "$out"

block="$tmp/curator.md"
{
	echo "Measured by \`make curator-bench REPEAT=$REPEAT REQUESTS=$REQUESTS STOCK=$STOCK CONCURRENCY=$CONCURRENCY\` on $(date -u +%Y-%m-%d):"
	echo "$REQUESTS purchases of one unit by $CONCURRENCY clients on a stock of $STOCK, $REPEAT rounds in shuffled orders; loopback, no round trip"
	echo "added, the servers at the default durability, one ZooKeeper and one MariaDB shared by all; two Go instances behind"
	echo "the lab's nginx for zookeeper, two Java instances behind an nginx of their own for each Curator row (OpenJDK"
	echo "$(java -version 2>&1 | sed -n 's/.*version "\([^"]*\)".*/\1/p'), Curator $(dpkg-query -W -f '${Version}' libcurator-recipes-java 2>/dev/null | cut -d- -f1)); $(nproc) CPUs shared by all of them. Each figure is the median"
	echo "over the rounds; oversold shows the worst round; \"invariants\" adds up every round's checks (the Java rows have no"
	echo "lock events to check). Lock wait: zookeeper's from the instances' metrics, Curator's from its answers' lock_wait_ms."
	echo
	echo '```'
	bin/seckill report "$out/report.json" | sed '/^$/q'
	bin/seckill report --as conclusion "$out/report.json"
	echo '```'
} > "$block"
scripts/readme-block.sh curator "$block"
