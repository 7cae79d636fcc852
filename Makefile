# slotgate's build. Every target needs only Go, except `make proto`, which
# installs Debian's protoc with apt-get; anything else a target uses is
# fetched through the Go module proxy at a pinned version, or skipped with a
# message saying why.

GO          ?= go
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT      ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS     ?= -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
BIN         ?= bin
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

# Settings for `make run`.
ENGINE_URL  ?= http://127.0.0.1:8000
LIMIT       ?= 8

.PHONY: help build build-all docker demo demo-fleet run run-proxy test test-go test-deploy test-interop fuzz-smoke fuzz soak fmt-check vet lint bench tidy-check clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/slotgate
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/slotgate ./cmd/slotgate

build-all: ## build slotgate, enginesim, slotgate-loadgen and slotgate-demo into bin/
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/...

IMAGE ?= slotgate:$(VERSION)

docker: ## build the image IMAGE (slotgate:VERSION) with Docker, version and commit stamped; says so and fails where Docker is missing
	@if ! command -v docker >/dev/null 2>&1; then \
		echo "docker: no docker command on this machine: install Docker (or build the Dockerfile with another builder, e.g. buildah or kaniko)" >&2; exit 1; fi
	@if ! docker info >/dev/null 2>&1; then \
		echo "docker: the docker command cannot reach a Docker daemon here (docker info fails): start one, or build the Dockerfile with another builder" >&2; exit 1; fi
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMAGE) .

demo: build-all ## one command: the same burst to enginesim alone and behind slotgate (N=8, W=4, Q=4), side by side, then one summary (about 30 s); bin/slotgate-demo --mode hammer: the original burst
	$(BIN)/slotgate-demo --bin $(BIN)

demo-fleet: build-all ## three workers (enginesim + slotgate each) behind the reference frontend: the same burst routed by load, then round robin, live view and summary
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/ ./examples/frontend/cmd/frontend ./examples/frontend/cmd/fleet-demo
	$(BIN)/fleet-demo --bin $(BIN)

run: build-all ## slotgate on :8080 (admin :9090) in front of enginesim, until Ctrl-C, with a guided tour
	$(BIN)/slotgate-demo --bin $(BIN) --serve --listen 127.0.0.1:8080 --admin-listen 127.0.0.1:9090 --admin-grpc-listen 127.0.0.1:9091

run-proxy: build ## slotgate in front of a real engine at ENGINE_URL with LIMIT engine slots
	$(BIN)/slotgate --engine-url $(ENGINE_URL) --engine-request-limit $(LIMIT) --log-format console

test: fmt-check vet lint tidy-check ## gofmt check, go vet, staticcheck, the tidy check, every test with the race detector (the 2-minute soak included), the deploy and interop checks beside them, and each fuzz target for 2 s
	@$(MAKE) --no-print-directory -j2 -Otarget test-go test-deploy test-interop
	@$(MAKE) --no-print-directory fuzz-smoke

test-go: ## every test of slotgate's module, with the race detector
	$(GO) test -race -count=1 ./...

# The deploy checks are a Go module of their own (Kubernetes, Helm, Envoy and
# Prometheus never reach slotgate's go.mod). Their first build compiles
# Helm and Kubernetes for minutes, mostly while test-go waits on its
# end-to-end tests, hence the two side by side in `make test`. Without the
# race detector: it would add minutes to compiling Helm, and the checks run
# no concurrent code of slotgate's.
test-deploy: ## the offline deploy checks: manifests, overlays, Helm, Envoy, Dockerfile, PromQL against the real binary, and promtool
	cd deploy && $(GO) vet ./... && $(GO) mod tidy -diff && $(GO) test -count=1 ./...
	deploy/monitoring/check

# The interop checks are a module of their own too: a NATS server run
# in-process and headless Chromium (installed by the test where apt-get
# can, skipped with a message elsewhere) never reach slotgate's go.mod.
test-interop: ## slotgate against real third parties: a NATS server with NATS's client and an independent MessagePack decoder, and the status page in headless Chromium
	cd interop && $(GO) vet ./... && $(GO) mod tidy -diff && $(GO) test -count=1 ./...

# Two targets at a time with one worker each: go test's start-up is most of
# a short run, and two overlap it on 2 cores.
fuzz-smoke: ## each fuzz target for FUZZTIME (2s), two at a time, without minimizing
	FUZZTIME=$${FUZZTIME:-2s} FUZZJOBS=$${FUZZJOBS:-2} GO=$(GO) scripts/fuzz smoke

# A million requests take about half an hour on 2 cores; the logs (about
# 350 MB) go to SOAK_OUT.
SOAK_OUT      ?= /tmp/slotgate-soak
SOAK_REQUESTS ?= 1000000
soak: build-all ## the chaos soak: SOAK_REQUESTS (a million) requests with faults, aborts, restarts and N changes; fails on any violation
	$(BIN)/slotgate-soak --bin $(BIN) --requests $(SOAK_REQUESTS) --concurrency 128 --out $(SOAK_OUT)

fuzz: ## each fuzz target for FUZZTIME (60s), minimizing a crasher for at most 10 s; a crasher is a regression test to commit
	FUZZTIME=$${FUZZTIME:-60s} GO=$(GO) scripts/fuzz long

# fmt-check reads the Go files git knows of or would add (new ones too,
# ignored ones not) that exist in the working tree; outside git, all.
fmt-check: ## fail if any file is not gofmt-ed
	@out=$$({ git ls-files --cached --others --exclude-standard '*.go' 2>/dev/null || find . -name '*.go'; } | \
		while read -r f; do if [ -f "$$f" ]; then echo "$$f"; fi; done | xargs gofmt -l); \
	if [ -n "$$out" ]; then echo "not gofmt-ed:"; echo "$$out"; exit 1; fi

vet: ## go vet
	$(GO) vet ./...

# lint first builds the pinned staticcheck (go run fetches it through the
# module proxy); when that fails, offline say, it skips staticcheck with the
# reason, and findings fail the target as usual.
lint: fmt-check vet ## gofmt, go vet and staticcheck (pinned, fetched by go run; skipped with a message when it cannot be)
	@if out=$$($(GO) run $(STATICCHECK) -version 2>&1); then \
		echo "$(GO) run $(STATICCHECK) ./..."; $(GO) run $(STATICCHECK) ./...; \
	else echo "lint: skipping staticcheck: $(STATICCHECK) could not be fetched or built:"; \
		echo "$$out" | tail -n 5 | sed 's/^/lint:   /'; fi

bench: ## issue 6 in one command: bench-go, then bench-peers (installs HAProxy and nginx when missing)
	@$(MAKE) --no-print-directory bench-go
	@$(MAKE) --no-print-directory bench-peers

bench-go: ## the limiter and proxy microbenchmarks, 5 runs each, saved to bench/results/<time>-go.txt (compare with benchstat)
	@mkdir -p bench/results; out=bench/results/$$(date -u +%Y%m%dT%H%M%SZ)-go.txt; \
	echo "bench-go: the limiter and proxy microbenchmarks, output also in $$out"; \
	$(GO) test -run '^$$' -bench . -benchmem -count 5 -benchtime 200ms ./limiter ./proxy 2>&1 | tee "$$out"; \
	if grep -q '^FAIL' "$$out"; then echo "bench-go: failed, see $$out" >&2; exit 1; fi; \
	echo "bench-go: written to $$out"

# Issue 19's benchmark: short prompts' TTFT with N alone, N and W, N and P,
# and N, W and P, against enginesim (about 2.5 minutes a run);
# TOKENBENCH_FLAGS passes flags on (e.g. TOKENBENCH_FLAGS='--reps 3').
TOKENBENCH_FLAGS ?=
.PHONY: bench-tokens
bench-tokens: ## what the prefill-token budget buys short prompts: a seeded mix of short chat prompts and rare huge ones under four configurations, to bench/results/<time>-tokens.json
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/ ./cmd/slotgate ./cmd/enginesim ./bench/cmd/slotgate-tokenbench
	$(BIN)/slotgate-tokenbench --bin $(BIN) --out bench/results $(TOKENBENCH_FLAGS)

tidy-check: ## fail if go.mod or go.sum are not tidy, showing the difference (changes nothing)
	@$(GO) mod tidy -diff || { echo "tidy-check: go.mod or go.sum is not tidy: run $(GO) mod tidy (the difference is above)" >&2; exit 1; }

clean: ## remove build outputs
	rm -rf $(BIN)

# Protocol buffers. `make proto` regenerates the Go code committed under
# protos/ with pinned generators, installed into $(PROTO_TOOLS) (ignored by
# git), one folder per version so that a new pin installs afresh. protoc
# itself is Debian's protobuf-compiler, with libprotobuf-dev for the
# well-known types, installed with apt-get when missing: the one tool here
# that does not come from the Go module proxy. The generated files name the
# protoc version, so only protoc $(PROTOC_VERSION) (Debian 12's) gives the
# committed bytes; `make proto-check` shows any difference.
PROTO_DIR                  := protos
PROTO_TOOLS                := $(CURDIR)/.bin
PROTOC_VERSION             := 3.21.12
PROTOC_GEN_GO_VERSION      := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
PROTOC_GEN_GO              := $(PROTO_TOOLS)/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)/protoc-gen-go
PROTOC_GEN_GO_GRPC         := $(PROTO_TOOLS)/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)/protoc-gen-go-grpc
PROTO_GEN_TOOLS            := $(PROTOC_GEN_GO) $(PROTOC_GEN_GO_GRPC)

# protoc-gen runs protoc over every .proto file under $(PROTO_DIR) and
# writes the Go code into the folder named by the shell variable out, next
# to where each .proto file sits.
protoc-gen = cd $(PROTO_DIR) && protoc -I . \
	--plugin=protoc-gen-go=$(PROTOC_GEN_GO) --go_out="$$out" --go_opt=paths=source_relative \
	--plugin=protoc-gen-go-grpc=$(PROTOC_GEN_GO_GRPC) --go-grpc_out="$$out" --go-grpc_opt=paths=source_relative \
	$$(find . -name '*.proto' | sed 's|^\./||' | LC_ALL=C sort)

.PHONY: proto proto-check protoc

proto: protoc $(PROTO_GEN_TOOLS) ## regenerate the Go code under protos/ (pinned generators; protoc from apt-get)
	find $(PROTO_DIR) -name '*.pb.go' -delete
	out=$(CURDIR)/$(PROTO_DIR) && $(protoc-gen)

proto-check: protoc $(PROTO_GEN_TOOLS) ## fail if the code under protos/ is not what `make proto` generates
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	cp -R $(PROTO_DIR)/. "$$tmp" && find "$$tmp" -name '*.pb.go' -delete && \
	(out=$$tmp && $(protoc-gen)) && \
	if diff -ru $(PROTO_DIR) "$$tmp"; then echo "proto-check: the generated code is up to date"; \
	else echo "proto-check: the generated code differs from what make proto writes (diff above)" >&2; exit 1; fi

$(PROTOC_GEN_GO):
	GOBIN=$(@D) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)

$(PROTOC_GEN_GO_GRPC):
	GOBIN=$(@D) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)

# protoc makes sure protoc and the well-known types (google/protobuf/*.proto)
# are there, installing Debian's packages when not, and warns when protoc is
# not the pinned version.
protoc:
	@wkt=$$(mktemp -d) && trap 'rm -rf "$$wkt"' EXIT && \
	printf 'syntax = "proto3";\nimport "google/protobuf/timestamp.proto";\n' >"$$wkt/wkt.proto" && \
	if ! command -v protoc >/dev/null 2>&1 || ! protoc -I "$$wkt" -o /dev/null "$$wkt/wkt.proto" 2>/dev/null; then \
		echo "proto: protoc or its well-known types are missing: installing Debian's protobuf-compiler and libprotobuf-dev with apt-get"; \
		if ! command -v apt-get >/dev/null 2>&1; then \
			echo "proto: no apt-get here: install protoc $(PROTOC_VERSION) and its include files yourself" >&2; exit 1; fi; \
		sudo=; if [ "$$(id -u)" != 0 ]; then \
			if ! command -v sudo >/dev/null 2>&1; then \
				echo "proto: installing protoc needs root, and sudo is missing: run apt-get install protobuf-compiler libprotobuf-dev as root" >&2; exit 1; fi; \
			sudo=sudo; echo "proto: not root: using sudo"; fi; \
		$$sudo apt-get update && \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y --no-install-recommends protobuf-compiler libprotobuf-dev || exit 1; \
	fi; \
	v=$$(protoc --version); if [ "$$v" != "libprotoc $(PROTOC_VERSION)" ]; then \
		echo "proto: warning: $$v is not libprotoc $(PROTOC_VERSION): the generated headers will differ from the committed ones" >&2; fi

# Peer benchmark (issue 6): slotgate against no proxy, HAProxy and nginx in
# one run on 127.0.0.1, with slotgate-bench (bench/cmd/slotgate-bench).
# haproxy and nginx-light come from Debian's packages, installed with
# apt-get when missing; a peer that cannot be installed is skipped with a
# message; so is wrk (Debian's), for the fast path under wrk. Results go to
# bench/results/<time>.json, the plots next to it and to BENCH_PLOT and
# BENCH_CPU_PLOT (the copies BENCHMARKS.md shows); BENCH_SCENARIOS picks
# scenarios (e.g. BENCH_SCENARIOS=streams-256,streams-1024; empty: all);
# BENCH_FLAGS passes flags on (e.g. BENCH_FLAGS='--reps 5 --duration 5s').
BENCH_FLAGS     ?=
BENCH_SCENARIOS ?=
BENCH_PLOT      ?= bench/latency.svg
BENCH_CPU_PLOT  ?= bench/streams-cpu.svg

.PHONY: bench-go bench-peers bench-peers-deps

bench-peers: bench-peers-deps ## slotgate vs direct, HAProxy and nginx (fast path sweep and under wrk, SSE, streams at scale, overload, memory, abandoned, gRPC streams); installs the peers and wrk with apt-get
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/ ./cmd/slotgate ./cmd/enginesim ./bench/cmd/slotgate-bench
	$(BIN)/slotgate-bench --bin $(BIN) --out bench/results --plot $(BENCH_PLOT) --cpu-plot $(BENCH_CPU_PLOT) --scenarios '$(BENCH_SCENARIOS)' $(BENCH_FLAGS)

bench-peers-deps:
	@missing=; \
	for p in haproxy:haproxy nginx:nginx-light wrk:wrk; do \
		bin=$${p%%:*}; pkg=$${p#*:}; \
		command -v $$bin >/dev/null 2>&1 || [ -x /usr/sbin/$$bin ] || missing="$$missing $$pkg"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	echo "bench-peers: missing:$$missing: installing Debian's packages with apt-get"; \
	if ! command -v apt-get >/dev/null 2>&1; then \
		echo "bench-peers: no apt-get here: the missing peers (or wrk's scenario) will be skipped" >&2; exit 0; fi; \
	sudo=; if [ "$$(id -u)" != 0 ]; then \
		if ! command -v sudo >/dev/null 2>&1; then \
			echo "bench-peers: installing needs root and sudo is missing: the missing peers will be skipped (run apt-get install$$missing as root)" >&2; exit 0; fi; \
		sudo=sudo; echo "bench-peers: not root: using sudo"; fi; \
	if ! { $$sudo apt-get update && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y --no-install-recommends $$missing; }; then \
		echo "bench-peers: apt-get install$$missing failed: the missing peers will be skipped" >&2; fi
