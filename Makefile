# Makefile: the lab's entry points. `make demo` goes from a fresh Debian
# machine to a benchmark report; `make test` is what CI runs (.ci/run).

SHELL    := /bin/bash
GO       ?= go
BIN      := bin/seckill
DIR      ?= .seckill
# Instances and strategy of `make up`; BASE_PORT moves every port (see
# internal/stack): redis B+1..5, etcd B+20/21, zookeeper B+30, mariadb B+40,
# nginx B+80, instances B+101..
INSTANCES ?= 3
STRATEGY  ?= none
BASE_PORT ?= 17000
# TOPOLOGY: single, or ha (Redis primary+replica under 3 Sentinels at
# B+6..B+10, etcd members B+22..B+27, ZooKeeper members B+31..B+39).
TOPOLOGY  ?= single
# PROXY=1: the fault proxy between instances and servers (partition and
# latency faults; the partition-holder and slow-db scenarios).
PROXY     ?=

# Debian packages of the servers and tools, and a binary each provides.
DEB_PKGS := redis-server etcd-server etcd-client zookeeper mariadb-server nginx-light wrk docker-compose chromium
DEB_BINS := redis-server etcd etcdctl /usr/share/java/zookeeper.jar mariadbd mysql_install_db nginx wrk docker-compose java chromium
SUDO     := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: all deps build up down status test demo bench lint clean proxy-cost report-shot

all: build

# deps installs the servers with apt, skipped entirely when all are there.
deps:
	@missing=""; for b in $(DEB_BINS); do \
	  case $$b in /*) [ -e $$b ] || missing="$$missing $$b";; \
	  *) command -v $$b >/dev/null 2>&1 || [ -x /usr/sbin/$$b ] || missing="$$missing $$b";; esac; \
	done; \
	if [ -z "$$missing" ]; then echo "deps: all present"; exit 0; fi; \
	echo "deps: missing$$missing; installing $(DEB_PKGS)"; \
	$(SUDO) apt-get update -q && \
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(DEB_PKGS)

build:
	$(GO) build -o $(BIN) ./cmd/seckill

up: build
	$(BIN) up --dir $(DIR) --topology $(TOPOLOGY) --instances $(INSTANCES) --strategy $(STRATEGY) --base-port $(BASE_PORT) $(if $(PROXY),--proxy)

down:
	@if [ -x $(BIN) ]; then $(BIN) down --dir $(DIR); else $(GO) run ./cmd/seckill down --dir $(DIR); fi

status: build
	$(BIN) status --dir $(DIR)

# test: a dedicated stack on its own ports, the whole suite with -race, the
# stack stopped even when tests fail (scripts/test.sh).
test:
	scripts/test.sh

# demo: from nothing to a benchmark report of every strategy.
demo: deps build up
	$(BIN) bench --dir $(DIR) --strategies all
	@echo "demo: the report is under results/ (its path is printed above)"

# bench: the harness with its defaults against the local stack (started
# if needed; `up` is a no-op when it runs).
bench: up
	$(BIN) bench --dir $(DIR)

# report-shot: screenshots of the newest report (REPORT=path to pick one)
# in headless Chromium, beside it: shot-projector.png and shot-full.png.
report-shot:
	scripts/report-shot.sh

# proxy-cost: the fault proxy's cost to `redis` throughput, one stack
# with it and one without, interleaved seeded runs (scripts/proxy-cost.sh).
proxy-cost: build
	scripts/proxy-cost.sh

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

clean:
	-@if [ -x $(BIN) ]; then $(BIN) down --dir $(DIR) >/dev/null; $(BIN) down --dir .seckill-test >/dev/null; fi
	rm -rf bin tmp $(DIR) .seckill-test
