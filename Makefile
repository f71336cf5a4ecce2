# sluice — the two commands a user needs are `make run` and `make test`.

GO      ?= go
BIN     := bin/sluice
PORT    ?= 6380
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all build run cli cluster test deps vet race fuzz soak bench bench-rls bench-cores bench-cluster clean

all: build

## build: compile the server to bin/sluice
build:
	$(GO) build -o $(BIN) ./cmd/sluice

## run: build, install redis-cli where it is missing, and start a server on 127.0.0.1:$(PORT) with the defaults
## (ARGS: more flags, e.g. make run ARGS='--enable-debug-command yes' for docs/commands.md's examples)
ARGS ?=
run: build cli
	./$(BIN) --port $(PORT) --bind 127.0.0.1 $(ARGS)

## cli: install redis-cli (Debian's redis-tools) where it is missing, to talk to the server
cli:
	@if ! command -v redis-cli >/dev/null 2>&1; then \
		echo "installing redis-tools (redis-cli)"; \
		{ DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get update -qq && \
		  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq redis-tools >/dev/null; } || \
		echo "could not install redis-tools: install redis-cli by hand to try the README's examples"; \
	fi

## cluster: build and start a local 3-node replicated group on 127.0.0.1:6381-6383 (Ctrl-C stops it); with GROUPS=N, a
## sharded cluster of N data groups of 3 nodes (deploy/local-cluster.sh: RESP on 7001.., Raft on 17001..; ARGS go to every
## node, e.g. ARGS='--cluster-proxy yes'; docs/cluster.md)
CLUSTER_DIR ?= data/cluster
GROUPS ?=
cluster: build cli
ifneq ($(GROUPS),)
	@deploy/local-cluster.sh -g $(GROUPS) -b $(BIN) -d $(CLUSTER_DIR)/sharded-$(GROUPS) -- $(ARGS)
else
	@mkdir -p $(CLUSTER_DIR)
	@set -e; trap 'kill $$(jobs -p) 2>/dev/null; wait; echo; echo "cluster stopped (state kept in $(CLUSTER_DIR))"' INT TERM EXIT; \
	./$(BIN) --port 6382 --node-id n2 --raft-bind 127.0.0.1:7382 --dir $(CLUSTER_DIR)/n2 --join 127.0.0.1:6381 --loglevel warning & \
	./$(BIN) --port 6383 --node-id n3 --raft-bind 127.0.0.1:7383 --dir $(CLUSTER_DIR)/n3 --join 127.0.0.1:6381 --loglevel warning & \
	./$(BIN) --port 6381 --node-id n1 --raft-bind 127.0.0.1:7381 --dir $(CLUSTER_DIR)/n1 --bootstrap yes \
		--peers 127.0.0.1:6382 127.0.0.1:6383 --loglevel warning & \
	sleep 3; \
	echo "3-node group up: redis-cli -p 6381|6382|6383 (any node serves any client)"; \
	echo "  redis-cli -p 6382 RL.TOKEN user:42 10/s 20"; \
	echo "  redis-cli -p 6381 RAFT.MEMBERS; redis-cli -p 6381 INFO replication"; \
	echo "Ctrl-C stops all three."; \
	wait
endif

## deps: install what the tests need (redis-cli from redis-tools; redis-server for the comparison tests; python3-redis, nodejs and npm for docs/client.md's snippets; python3-limits for the limiter libraries' comparison; systemd for systemd-analyze)
deps:
	@if ! command -v redis-cli >/dev/null 2>&1 || ! command -v redis-server >/dev/null 2>&1 || \
		! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1 || \
		! /usr/bin/python3 -c 'import redis' >/dev/null 2>&1 || \
		! /usr/bin/python3 -c 'import limits' >/dev/null 2>&1; then \
		echo "installing redis-tools, redis-server, python3-redis, python3-limits, nodejs and npm"; \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq redis-tools redis-server python3-redis python3-limits nodejs npm >/dev/null; \
	fi
	@if ! command -v systemd-analyze >/dev/null 2>&1; then \
		echo "installing systemd (systemd-analyze verify checks deploy/systemd/sluice.service)"; \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends systemd >/dev/null; \
	fi
	$(GO) mod download
	cd bench && $(GO) mod download

## vet: gofmt, go vet and staticcheck (pinned; staticcheck.conf) over the module and the bench module (bench/go.mod), the layering
## check (.ci/layers: imports follow docs/architecture.md's diagram), and no committed executables (.ci/executables)
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt -w these files:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	cd bench && $(GO) vet ./...
	$(STATICCHECK) ./...
	cd bench && $(STATICCHECK) ./...
	.ci/layers
	.ci/executables_test
	.ci/executables

## race: every test of both modules, with the race detector (fuzz targets run their seed corpora)
race:
	$(GO) test -race -count=1 -timeout 20m ./...
	cd bench && $(GO) test -race -count=1 -timeout 20m ./...

## test: install what the tests need, vet, and run every test under -race
test: deps vet race

## fuzz: run each fuzz target of both modules for FUZZTIME (default 30s)
FUZZTIME ?= 30s
fuzz:
	@for mod in . bench; do \
		for pkg in $$(cd $$mod && $(GO) list ./...); do \
			for f in $$(cd $$mod && $(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
				echo "== $$pkg $$f"; (cd $$mod && $(GO) test -run=NONE -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg) || exit 1; \
			done; \
		done; \
	done

## soak: kill and restart a 3-process group's leader again and again for SOAK (default 10m), each cycle checked by porcupine
SOAK ?= 10m
soak:
	$(GO) test ./cluster -run TestProcessSoak -v -soak $(SOAK) -timeout 2h

## bench: sluice vs Redis + Lua, side by side, then sluice's Envoy rate limit service vs envoyproxy/ratelimit + Redis
## over gRPC (built once into the user cache directory from the Go module proxy; skipped with a message if it cannot be);
## rewrites bench/RESULTS.md (BENCH=full: everything, into bench/full/RESULTS.md). bench is its own module (bench/go.mod),
## run from its directory, so the paths given to it are relative to bench/
BENCH_MD = $(if $(filter full,$(BENCH)),full/RESULTS.md,RESULTS.md)
bench:
	cd bench && BENCH=$(BENCH) $(GO) run . -md $(BENCH_MD)

## bench-rls: only the Envoy RLS v3 comparison, into its section of bench/RESULTS.md
bench-rls:
	cd bench && $(GO) run . -rls only -md RESULTS.md

## bench-cluster: RL.TOKEN on one node, through a 3-node group's leader and through a sharded cluster of 3 groups of 3 processes
## (a cluster client: each key to its slot's leader) at P1, P16, P64, with the CPU of leaders and followers; into its section of
## bench/RESULTS.md
bench-cluster:
	cd bench && $(GO) run . -plan cluster -md RESULTS.md

## bench-cores: sluice on CORES (default 1,2,4,8) cores of its own against Redis on one thread and with io-threads (RL.TOKEN vs
## INCR, and the five libraries' scripts, at P16), the load generator on GEN_CPUS CPUs of its own (0: half of them); counts the
## machine cannot hold are skipped and named. Prints markdown for bench/RESULTS.md (docs/architecture.md, "Running on more cores")
CORES    ?= 1,2,4,8
GEN_CPUS ?= 0
bench-cores:
	cd bench && $(GO) run . -cores $(CORES) -gen-cpus $(GEN_CPUS)

clean:
	rm -rf bin
