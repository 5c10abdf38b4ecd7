#!/usr/bin/env bash
# scripts/soak.sh (`make soak`): one steady load on the ha topology for
# SOAK_FOR (default 1h) at SOAK_RATE purchases/s (default 40), with every
# process's RSS and every instance's goroutines and open fds sampled and one
# event stream open throughout (`seckill soak`). The stack is its own
# (SOAK_DIR, SOAK_BASE_PORT) and is stopped at the end. The report goes to
# results/soak-<timestamp>/; its summary replaces the soak block (docs/reliability.md).
set -euo pipefail
cd "$(dirname "$0")/.."

SOAK_DIR=${SOAK_DIR:-.seckill-soak}
SOAK_BASE_PORT=${SOAK_BASE_PORT:-19000}
SOAK_FOR=${SOAK_FOR:-1h}
SOAK_RATE=${SOAK_RATE:-40}
OUT=${SOAK_OUT:-results/soak-$(date +%Y%m%d-%H%M%S)}

bin/seckill down --dir "$SOAK_DIR"
trap 'bin/seckill down --dir "$SOAK_DIR" || true' EXIT
bin/seckill up --dir "$SOAK_DIR" --base-port "$SOAK_BASE_PORT" --topology ha --instances 3
status=0
bin/seckill soak --dir "$SOAK_DIR" --for "$SOAK_FOR" --rate "$SOAK_RATE" --out "$OUT" || status=$?
if [ -f "$OUT/soak.md" ]; then
  # The block's header names the command and the date, not this machine's
  # paths: soak.md writes the stack's and the report's directories DIR and OUT.
  {
    echo "Printed by \`scripts/soak.sh\` (\`make soak\`, SOAK_FOR=$SOAK_FOR SOAK_RATE=$SOAK_RATE, $(date -u +%Y-%m-%d))"
    echo "on an ha stack of its own; its report stays on the machine that ran it (not committed)."
    echo
    cat "$OUT/soak.md"
  } > "$OUT/soak-block.md"
  scripts/readme-block.sh soak "$OUT/soak-block.md"
fi
exit "$status"
