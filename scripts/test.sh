#!/usr/bin/env bash
# scripts/test.sh (`make test`, CI): installs missing servers, builds, lints
# (gofmt, go vet, staticcheck: `make lint`), starts
# a dedicated test stack on its own ports, runs the whole suite with -race
# against it (its env.sh exports every SECKILL_* variable), and stops the
# stack even when the tests fail. Exits with go test's status.
set -euo pipefail
cd "$(dirname "$0")/.."

TEST_DIR=${SECKILL_TEST_DIR:-.seckill-test}
TEST_BASE_PORT=${SECKILL_TEST_BASE_PORT:-$((27000 + ${SECKILL_TEST_PORT_SHIFT:-0}))}
TEST_INSTANCES=${SECKILL_TEST_INSTANCES:-3}

make deps
make build
# gofmt, go vet and staticcheck: any finding fails the run before a test starts.
make lint

# A stale test stack from an aborted run: stop it first.
bin/seckill down --dir "$TEST_DIR"

stop_stack() {
  bin/seckill down --dir "$TEST_DIR" || true
}
trap stop_stack EXIT

# The test stack gets its own generated admin token.
unset SECKILL_ADMIN_TOKEN
bin/seckill up --dir "$TEST_DIR" --base-port "$TEST_BASE_PORT" --instances "$TEST_INSTANCES"
# shellcheck disable=SC1090,SC1091
source "$TEST_DIR/env.sh"

status=0
go test -race -count=1 -timeout 30m ./... || status=$?
exit "$status"
