#!/usr/bin/env bash
# scripts/test.sh (`make test`, CI): installs missing servers, builds, lints
# (gofmt, go vet, staticcheck: `make lint`), starts
# a dedicated test stack on its own ports, runs the whole suite with -race
# against it (its env.sh exports every SECKILL_* variable), and stops the
# stack even when the tests fail. Exits with go test's status.
#
# Ports: every port of the suite moves with SECKILL_TEST_PORT_SHIFT
# (internal/testenv.Port; the ranges are internal/ports.Suite). Unset (and
# no SECKILL_TEST_BASE_PORT), `seckill lab test-shift` picks it: 0 when the
# suite's ports are free, else a free shift, said on stderr, and records it
# in the lab registry for as long as this script runs, so that two
# checkouts can run `make test` side by side and no `seckill lab new` takes
# those ports meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."

TEST_DIR=${SECKILL_TEST_DIR:-.seckill-test}
TEST_INSTANCES=${SECKILL_TEST_INSTANCES:-3}

make deps
# -trimpath for every go command of the run (the build, go vet, go test,
# and the ones the tests start: the stacks' binaries, the grader's builds):
# the build cache then keys the module's packages by their content, not by
# the checkout's path, so a second clone on the same machine compiles only
# what changed, not the whole module again.
# (GOFLAGS in the environment replaces the go env file's: keep that one's.)
goflags=$(go env GOFLAGS)
export GOFLAGS="${goflags:+$goflags }-trimpath"
make build
# gofmt, go vet and staticcheck: any finding fails the run before a test starts.
make lint

# A stale test stack from an aborted run: stop it first (before the ports
# are picked: its own would count as taken).
bin/seckill down --dir "$TEST_DIR"

if [ -z "${SECKILL_TEST_PORT_SHIFT:-}" ] && [ -z "${SECKILL_TEST_BASE_PORT:-}" ]; then
  SECKILL_TEST_PORT_SHIFT=$(bin/seckill lab test-shift --pid $$)
  export SECKILL_TEST_PORT_SHIFT
fi
TEST_BASE_PORT=${SECKILL_TEST_BASE_PORT:-$((27000 + ${SECKILL_TEST_PORT_SHIFT:-0}))}

stop_stack() {
  bin/seckill down --dir "$TEST_DIR" || true
}
trap stop_stack EXIT

# The test stack gets its own generated admin token.
unset SECKILL_ADMIN_TOKEN
bin/seckill up --dir "$TEST_DIR" --base-port "$TEST_BASE_PORT" --instances "$TEST_INSTANCES"
# shellcheck disable=SC1090,SC1091
source "$TEST_DIR/env.sh"

# The longest packages first (their own stacks, their faults and grades
# wait on servers more than they use a CPU), four packages at a time: go
# test starts packages in the order given, and at its default of one per
# CPU the suite leaves a two-CPU machine a third idle while the four
# longest run one after another.
SLOW="./internal/grade ./internal/grade/answers ./internal/lesson ./internal/scenario ./internal/nemesis ./internal/stack ./bench ./examples/curator ./internal/app ./lockimpl/consullock ./lockimpl/etcdlock ./internal/cluster ./lockimpl/redlock"
# shellcheck disable=SC2086
go test -race -count=1 -p "${SECKILL_TEST_P:-4}" -timeout 30m $SLOW ./...
