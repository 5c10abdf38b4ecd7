#!/usr/bin/env bash
# scripts/nemesis.sh (`make nemesis`): one nemesis run on the ha topology
# with the fault proxy (`seckill nemesis`): a steady load under
# NEMESIS_STRATEGY (default redis, with fencing where the strategy has
# tokens) for NEMESIS_FOR (default 10m) while faults drawn from
# NEMESIS_SEED (default 1) kill, pause, cut and fail over its servers,
# links and instances. The stack is its own (NEMESIS_DIR, NEMESIS_BASE_PORT)
# and is stopped at the end. The report goes to results/nemesis-<timestamp>/;
# its summary replaces the nemesis block (docs/reliability.md).
set -euo pipefail
cd "$(dirname "$0")/.."

NEMESIS_DIR=${NEMESIS_DIR:-.seckill-nemesis}
NEMESIS_BASE_PORT=${NEMESIS_BASE_PORT:-19500}
NEMESIS_STRATEGY=${NEMESIS_STRATEGY:-redis}
NEMESIS_FOR=${NEMESIS_FOR:-10m}
NEMESIS_SEED=${NEMESIS_SEED:-1}
OUT=${NEMESIS_OUT:-results/nemesis-$(date +%Y%m%d-%H%M%S)}

# Fencing where the strategy has tokens (the catalogue's TOKENS column).
fencing=()
if [ "$(bin/seckill strategies | awk -v s="$NEMESIS_STRATEGY" '$1 == s { print $4 }')" = yes ]; then
  fencing=(--fencing)
fi

bin/seckill down --dir "$NEMESIS_DIR"
trap 'bin/seckill down --dir "$NEMESIS_DIR" || true' EXIT
bin/seckill up --dir "$NEMESIS_DIR" --base-port "$NEMESIS_BASE_PORT" --topology ha --proxy --instances 3
status=0
bin/seckill nemesis --dir "$NEMESIS_DIR" --strategy "$NEMESIS_STRATEGY" ${fencing[@]+"${fencing[@]}"} --for "$NEMESIS_FOR" \
  --seed "$NEMESIS_SEED" --out "$OUT" || status=$?
if [ -f "$OUT/nemesis.md" ]; then
  # The block's header names the command and the date, not this machine's
  # paths: nemesis.md writes the stack's and the report's directories DIR and OUT.
  {
    echo "Printed by \`scripts/nemesis.sh\` (\`make nemesis\`, NEMESIS_STRATEGY=$NEMESIS_STRATEGY NEMESIS_FOR=$NEMESIS_FOR NEMESIS_SEED=$NEMESIS_SEED, $(date -u +%Y-%m-%d))"
    echo "on an ha stack of its own; its report and chart stay on the machine that ran it (not committed)."
    echo
    cat "$OUT/nemesis.md"
  } > "$OUT/nemesis-block.md"
  scripts/readme-block.sh nemesis "$OUT/nemesis-block.md"
fi
exit "$status"
