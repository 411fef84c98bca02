# Pinned tool versions. The protoc plugins are pinned in go.mod (tool directives).
BUF_VERSION := v1.75.0

BIN := $(CURDIR)/bin
BUF := $(BIN)/buf
GO  ?= go

.PHONY: all build run test check fmt generate lint vet imports gen-check clean

all: build

build:
	$(GO) build -o $(BIN)/gateway .

run: build
	$(BIN)/gateway dev

# The gateway against a bare reverse proxy over the upstream simulator: CPU per request, req/s,
# p50/p99, peak RSS and 25 MiB uploads (see bench.go; -uploads 0 skips those).
# Flags: make bench BENCH_FLAGS='-duration 3s -warmup 1s'.
.PHONY: bench
bench: build
	$(BIN)/gateway bench $(BENCH_FLAGS)

test:
	$(GO) test -count=1 -timeout 15m ./...

# The randomized fault soak of issue 13 at full length: 10^5 operations over two replicas
# (make test runs it for a few seconds). GATEWAY_SOAK_SEED=<seed> replays a run.
.PHONY: soak
soak:
	GATEWAY_SOAK_OPS=100000 $(GO) test -count=1 -timeout 90m -run '^TestFaultSoak$$' -v .

check: fmt lint vet imports gen-check

$(BUF):
	GOBIN=$(BIN) $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)

generate: $(BUF)
	$(BUF) generate

lint: $(BUF)
	$(BUF) lint

vet:
	$(GO) vet ./...

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/')); [ -z "$$out" ] || { echo "gofmt needed:"; echo "$$out"; exit 1; }

# Import rules of the design: front and realtime reach core only through gen/ and core/wire;
# core never imports front or realtime; provider adapters never touch the store.
imports:
	@$(GO) list -f '{{.ImportPath}} {{join .Imports " "}}' ./... | awk '\
	  { pkg=$$1; for (i=2;i<=NF;i++) { imp=$$i; if (imp !~ /^modelgateway\//) continue; \
	    if (pkg ~ /^modelgateway\/(front|realtime)(\/|$$)/ && imp ~ /^modelgateway\/core\// && imp !~ /^modelgateway\/core\/wire(\/|$$)/) bad=bad "\n  " pkg " imports " imp; \
	    if (pkg ~ /^modelgateway\/core(\/|$$)/ && imp ~ /^modelgateway\/(front|realtime)(\/|$$)/) bad=bad "\n  " pkg " imports " imp; \
	    if (pkg ~ /^modelgateway\/core\/provider(\/|$$)/ && imp ~ /^modelgateway\/core\/store(\/|$$)/) bad=bad "\n  " pkg " imports " imp; } } \
	  END { if (bad != "") { print "import rule violations:" bad; exit 1 } }'

# gen/ must be exactly what `make generate` produces from proto/.
gen-check: $(BUF)
	@rm -rf $(CURDIR)/.gen-check && mkdir -p $(CURDIR)/.gen-check
	$(BUF) generate -o $(CURDIR)/.gen-check
	@diff -r gen $(CURDIR)/.gen-check/gen > /dev/null || { echo "gen/ is stale: run make generate and commit"; diff -r gen $(CURDIR)/.gen-check/gen | head -20; rm -rf $(CURDIR)/.gen-check; exit 1; }
	@rm -rf $(CURDIR)/.gen-check

clean:
	rm -rf $(BIN) .gen-check
