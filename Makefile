# slotgate's build. Every target needs only Go; anything else a target uses
# is fetched through the Go module proxy at a pinned version, or skipped with
# a message saying why.

GO          ?= go
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT      ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS     ?= -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
BIN         ?= bin
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

# Settings for `make run`.
ENGINE_URL  ?= http://127.0.0.1:8000
LIMIT       ?= 8

.PHONY: help build build-all demo run run-proxy test fmt-check vet lint bench tidy-check clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/slotgate
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/slotgate ./cmd/slotgate

build-all: ## build slotgate, enginesim, slotgate-loadgen and slotgate-demo into bin/
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/...

demo: build-all ## one command: enginesim, slotgate (N=8, Q=4) and a burst of 64 streams, then a summary
	$(BIN)/slotgate-demo --bin $(BIN)

run: build-all ## slotgate on :8080 (admin :9090) in front of enginesim, until Ctrl-C, with curl examples
	$(BIN)/slotgate-demo --bin $(BIN) --serve --listen 127.0.0.1:8080 --admin-listen 127.0.0.1:9090

run-proxy: build ## slotgate in front of a real engine at ENGINE_URL with LIMIT engine slots
	$(BIN)/slotgate --engine-url $(ENGINE_URL) --engine-request-limit $(LIMIT) --log-format console

test: fmt-check vet ## gofmt check, go vet, and every test with the race detector
	$(GO) test -race -count=1 ./...

fmt-check: ## fail if any file is not gofmt-ed
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "not gofmt-ed:"; echo "$$out"; exit 1; fi

vet: ## go vet
	$(GO) vet ./...

lint: fmt-check vet ## gofmt, go vet and staticcheck (pinned, fetched by go run)
	@if $(GO) run $(STATICCHECK) -version >/dev/null 2>&1; then \
		$(GO) run $(STATICCHECK) ./...; \
	else echo "lint: skipping staticcheck: $(STATICCHECK) could not be fetched from the module proxy"; fi

bench: ## the limiter and proxy microbenchmarks, 5 runs each (compare with benchstat)
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./limiter ./proxy

tidy-check: ## fail if go.mod or go.sum are not tidy
	$(GO) mod tidy
	git diff --exit-code go.mod go.sum

clean: ## remove build outputs
	rm -rf $(BIN)
