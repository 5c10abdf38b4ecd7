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

# Packages of the servers and tools per package manager (`make deps` uses
# the first of apt-get, dnf and brew it finds), and the binaries whose
# presence skips the install. A|B: either name will do; "zookeeper": the
# Debian jar or a zkServer.sh install (see `seckill doctor`, which checks
# the same servers with their versions); "cjkfont": a font with Chinese
# glyphs (fc-list), for the lessons, reports and dashboard in a browser;
# "curatorjars": the jars examples/curator compiles against (Curator's
# recipes, MariaDB Connector/J, Gson under /usr/share/java), Debian only.
DEB_PKGS  := redis-server etcd-server etcd-client zookeeper mariadb-server nginx-light wrk docker-compose chromium fonts-wqy-microhei \
             default-jdk-headless libcurator-recipes-java libmariadb-java libgoogle-gson-java
DEB_BINS  := redis-server etcd etcdctl zookeeper mariadbd mysql_install_db nginx wrk docker-compose java javac chromium cjkfont curatorjars
# Fedora: mariadbd lives in /usr/libexec; ZooKeeper is not packaged in
# every release (then unpack the Apache tarball and set ZOOKEEPER_HOME).
RPM_PKGS  := redis etcd zookeeper java-21-openjdk-headless mariadb-server nginx wrk chromium wqy-microhei-fonts
RPM_BINS  := redis-server etcd etcdctl zookeeper mariadbd mariadb-install-db|mysql_install_db nginx wrk java cjkfont
# Homebrew (macOS, arm or intel): mariadb and openjdk are keg-only, found
# under $(brew --prefix)/opt/*/bin. No chromium formula: report-shot needs
# a Chromium you install yourself.
BREW_PKGS := redis etcd zookeeper openjdk mariadb nginx wrk
BREW_BINS := redis-server etcd etcdctl zookeeper mariadbd|mysqld mariadb-install-db|mysql_install_db nginx wrk java
SUDO      := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: all go-version deps packages build up down status test demo bench lint clean curator lab-capacity dry-run proxy-cost report-shot perf readme doctor soak nemesis manifests client-bench curator-bench bench-memory perf-model

all: build

# go-version: the Go that $(GO) runs is at least go.mod's `go` line, or
# make stops at once saying how to get one (scripts/check-go.sh). deps and
# build check it first; a distribution's Go (Debian 12's is 1.19) is too old.
go-version:
	@GO="$(GO)" scripts/check-go.sh

# deps installs the servers with apt-get, dnf or brew (whichever exists),
# skipped entirely when all are there.
# consul: Consul 1.16.3, the newest release under MPL-2.0 (its module's
# LICENSE; later ones are under the BUSL), which no distribution packages, built once from the module proxy into bin/
# against tools/consul's committed go.sum (2-9 min, about 165 MB). Skipped
# when bin/consul already is that version. The checksum database does not
# answer for some of its dependencies: go.sum is what verifies them.
CONSUL := bin/consul
CONSUL_VERSION := 1.16.3
$(CONSUL): tools/consul/go.mod tools/consul/go.sum | go-version
	@if [ -x $(CONSUL) ] && $(CONSUL) version 2>/dev/null | grep -q "^Consul v$(CONSUL_VERSION)$$"; then \
	  touch $(CONSUL); echo "deps: consul $(CONSUL_VERSION) present"; \
	else echo "deps: building consul $(CONSUL_VERSION) into $(CONSUL) (a few minutes, once)"; \
	  cd tools/consul && GOFLAGS=-mod=mod GONOSUMDB='*' GOSUMDB=off $(GO) build -trimpath -o ../../$(CONSUL) github.com/hashicorp/consul; fi

# etcd: the newest etcd server the module proxy serves (3.7.3; the
# distributions package 3.4, past its end of life), built the same way
# into bin/ against tools/etcd's go.sum (about 1.5 min, once). The finder
# searches bin/ before PATH; `seckill up --etcd /usr/bin/etcd` runs the
# distribution's to compare.
ETCD := bin/etcd
ETCD_VERSION := 3.7.3
$(ETCD): tools/etcd/go.mod tools/etcd/go.sum | go-version
	@if [ -x $(ETCD) ] && $(ETCD) --version 2>/dev/null | grep -q "^etcd Version: $(ETCD_VERSION)$$"; then \
	  touch $(ETCD); echo "deps: etcd $(ETCD_VERSION) present"; \
	else echo "deps: building etcd $(ETCD_VERSION) into $(ETCD) (about 1.5 min, once)"; \
	  cd tools/etcd && GOFLAGS=-mod=mod $(GO) build -trimpath -o ../../$(ETCD) go.etcd.io/etcd/server/v3; fi

deps: go-version packages $(CONSUL) $(ETCD)

packages: | go-version
	@if command -v apt-get >/dev/null 2>&1; then pm=apt-get; bins="$(DEB_BINS)"; \
	elif command -v dnf >/dev/null 2>&1; then pm=dnf; bins="$(RPM_BINS)"; \
	elif command -v brew >/dev/null 2>&1; then pm=brew; bins="$(BREW_BINS)"; \
	else echo "deps: no apt-get, dnf or brew found; install redis, etcd, zookeeper (and java), mariadb and nginx yourself (seckill doctor checks them)"; exit 1; fi; \
	have() { for n in $${1//|/ }; do \
	  if [ "$$n" = zookeeper ]; then \
	    for z in /usr/share/java/zookeeper.jar $${ZOOKEEPER_HOME:+$$ZOOKEEPER_HOME/bin/zkServer.sh} /usr/share/zookeeper/lib /opt/zookeeper/bin/zkServer.sh \
	      /opt/homebrew/opt/zookeeper/libexec/bin/zkServer.sh /usr/local/opt/zookeeper/libexec/bin/zkServer.sh; do [ -e "$$z" ] && return 0; done; \
	    continue; fi; \
	  if [ "$$n" = cjkfont ]; then fc-list :lang=zh 2>/dev/null | grep -q . && return 0; continue; fi; \
	  if [ "$$n" = curatorjars ]; then $(CURATOR_HAVE_JARS) && return 0; continue; fi; \
	  command -v $$n >/dev/null 2>&1 && return 0; \
	  for d in /usr/sbin /sbin /usr/libexec /opt/homebrew/bin /opt/homebrew/opt/*/bin /usr/local/bin /usr/local/opt/*/bin; do [ -x "$$d/$$n" ] && return 0; done; \
	done; return 1; }; \
	missing=""; for b in $$bins; do have "$$b" || missing="$$missing $$b"; done; \
	if [ -z "$$missing" ]; then echo "deps: all present"; exit 0; fi; \
	case $$pm in \
	apt-get) echo "deps: missing$$missing; installing $(DEB_PKGS)"; \
	  $(SUDO) apt-get update -q && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(DEB_PKGS);; \
	dnf) echo "deps: missing$$missing; installing $(RPM_PKGS)"; \
	  $(SUDO) dnf install -y $(RPM_PKGS);; \
	brew) echo "deps: missing$$missing; installing $(BREW_PKGS)"; \
	  brew install $(BREW_PKGS);; \
	esac

# doctor: what `seckill up` needs, found or missing, and how to install it.
doctor: build
	$(BIN) doctor --dir $(DIR)

# build stamps the commit into the binary (`seckill version`): -buildvcs=auto
# overrides a GOFLAGS=-buildvcs=false in go env, and stamps nothing outside a
# git checkout.
build: go-version
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/seckill
	@if command -v javac >/dev/null 2>&1 && $(CURATOR_HAVE_JARS); then $(MAKE) -s --no-print-directory $(CURATOR_JAR); fi

# curator: examples/curator, the sources' Java recipe (Apache Curator's
# InterProcessMutex) as a stock service, compiled with javac --release 17
# against Debian's jars into bin/curator/ (examples/curator/build.sh: no
# Maven, no network). make build builds it too when javac and the jars are
# there (make deps installs them on Debian).
CURATOR_JAR := bin/curator/seckill-curator.jar
CURATOR_HAVE_JARS := (for j in curator-recipes mariadb-java-client gson; do [ -f /usr/share/java/$$j.jar ] || exit 1; done)
$(CURATOR_JAR): examples/curator/build.sh $(wildcard examples/curator/src/seckill/curator/*.java)
	examples/curator/build.sh bin/curator

curator: $(CURATOR_JAR)

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

# manifests: deploy/k8s rendered from the lab's description of its servers
# (internal/cluster); a test fails when the committed files differ.
manifests:
	$(GO) generate ./internal/cluster

# demo: from nothing to a benchmark report of every strategy: three rounds
# in crossed order with a fixed seed, medians and min-max ranges, the same
# command as the README's demo block (scripts/readme.sh's DEMO_FLAGS; a
# test keeps the two the same), so your table reads like the README's.
DEMO_FLAGS := --strategies all --repeat 3 --seed 42
demo: deps build up
	$(BIN) bench --dir $(DIR) $(DEMO_FLAGS)
	@echo "demo: the report is under results/ (its path is printed above)"

# bench: the harness with its defaults against the local stack (started
# if needed; `up` is a no-op when it runs).
bench: up
	$(BIN) bench --dir $(DIR)

# report-shot: screenshots of the newest report, a bench's or a course's
# (REPORT=path to pick one: report.html, scenario.html, course.html or
# their directory) in headless Chromium, beside it: shot-projector.png and
# shot-full.png.
report-shot:
	scripts/report-shot.sh

# readme: regenerates the measured blocks of README.md and docs/ (the demo
# table, the lessons' verdicts, the performance section) from real runs against
# `make up` (scripts/readme.sh, about 20 minutes on an idle machine).
readme: up
	DIR=$(DIR) scripts/readme.sh

# perf: docs/performance.md's measured block from one command (scripts/perf.sh):
# the database ceiling and each correct strategy's fraction of it, the
# local queue on and off, the scaling sweep and batching, against `make up`.
perf: up
	DIR=$(DIR) scripts/perf.sh

# perf-model: the cost model's measured/model ratio of sql-atomic and each
# lock at loopback and at a 2 ms round trip, median and range of RUNS (3)
# benches, on a stack of its own; rewrites docs/cost-model.md's block
# cost-model-repeats (scripts/perf-model.sh; make perf runs it last).
perf-model: build
	scripts/perf-model.sh

# soak: one hour (SOAK_FOR) of steady load (SOAK_RATE purchases/s) on an ha
# stack of its own, every process's RSS and every instance's goroutines and
# fds sampled, one event stream open throughout; rewrites the soak
# block of docs/reliability.md (scripts/soak.sh).
soak: build
	scripts/soak.sh

# nemesis: for each entry of NEMESIS_RUNS (every correct strategy, then an
# unfenced redis), a steady load on an ha stack of its own with the fault
# proxy for NEMESIS_FOR (10m), while faults drawn from NEMESIS_SEED (1) kill,
# pause, cut and fail over its servers and instances; rewrites the nemesis
# block of docs/reliability.md (scripts/nemesis.sh).
nemesis: build
	scripts/nemesis.sh

# dry-run: the handout's students' path (a fresh clone, make build, lab new
# --for all, the starter's grade, a right answer's grade), timed for
# STUDENTS (3) at once; replaces the handout's workshop-dry-run blocks.
dry-run: build
	scripts/dry-run.sh

# lab-capacity: how many labs one server takes (memory of a single and an
# ha lab, idle and after a bench; CPU of a lesson on one lab and on LABS at
# once), on labs of its own; replaces docs/labs.md's lab-capacity block and
# the handout's labs-per-server lines (a class's lab, --for all).
lab-capacity: build
	scripts/lab-capacity.sh

# proxy-cost: the fault proxy's cost to `redis` throughput, one stack
# with it and one without, interleaved seeded runs (scripts/proxy-cost.sh).
proxy-cost: build
	scripts/proxy-cost.sh

# client-bench: the bench's hand-written HTTP/1.1 client (bench/transport.go)
# against fasthttp's HostClient behind the same workers and null server, in
# alternated pairs of `go test -bench` runs (PAIRS, BENCHTIME); rewrites
# docs/performance.md's client-bench block (scripts/client-bench.sh). It
# needs no stack.
client-bench: go-version
	GO="$(GO)" scripts/client-bench.sh

# bench-memory: the bench's own peak memory and checks' time as a run grows
# (SIZES requests of MEM_STRATEGY, then LOCK_SIZES of the lock MEM_LOCK, one
# run each, on a stack of its own at BASE); rewrites
# docs/performance.md's bench-memory block (scripts/bench-memory.sh).
bench-memory: build
	SIZES="$(or $(SIZES),30000 100000 250000 1000000)" STRATEGY="$(or $(MEM_STRATEGY),sql-atomic)" LOCK_SIZES="$(or $(LOCK_SIZES),100000 250000)" LOCK_STRATEGY="$(or $(MEM_LOCK),redis)" BASE="$(or $(BASE),20400)" scripts/bench-memory.sh

# curator-bench: the sources' Curator recipe (examples/curator) beside the
# lab's zookeeper strategy in one bench report, on a stack of its own;
# rewrites the block "curator" of docs/sources.md.
curator-bench: build curator
	scripts/curator-bench.sh

# lint: gofmt (any file listed fails), go vet and staticcheck, all clean.
# staticcheck is pinned in tools/staticcheck (go.mod + go.sum) and built
# from there into bin/, never fetched @latest. `make test` runs it first.
STATICCHECK := bin/staticcheck
$(STATICCHECK): tools/staticcheck/go.mod tools/staticcheck/go.sum
	cd tools/staticcheck && $(GO) build -o ../../$(STATICCHECK) honnef.co/go/tools/cmd/staticcheck

lint: $(STATICCHECK)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

clean:
	-@if [ -x $(BIN) ]; then $(BIN) down --dir $(DIR) >/dev/null; $(BIN) down --dir .seckill-test >/dev/null; fi
	rm -rf bin tmp $(DIR) .seckill-test
