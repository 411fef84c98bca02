# Pinned tool versions. The protoc plugins are pinned in go.mod (tool directives).
BUF_VERSION := v1.75.0
GREMLINS_VERSION := v0.6.0

BIN := $(CURDIR)/bin
BUF := $(BIN)/buf
GREMLINS := $(BIN)/gremlins
GO  ?= go

.PHONY: all build run test deps check fmt generate lint vet imports gen-check clean image

all: build

# What run and test need from the machine, installed when missing (deploy/deps/deps.sh):
# PostgreSQL's server for both; Node.js, npm, the TypeScript SDK suite's npm packages and
# Chromium for test. apt-get as root or through sudo; otherwise it stops with the command to
# run. GATEWAY_DEPS=check only says what is missing, GATEWAY_DEPS=skip installs nothing.
DEPS := bash deploy/deps/deps.sh
deps:
	@$(DEPS) test
.PHONY: deps-run
deps-run:
	@$(DEPS) run

# -s -w: no symbol table or DWARF in bin/gateway, which cuts the link, the longest step of a
# rebuild, by about a third (stack traces and pprof profiles keep their names; a debugger
# wants `make build BUILD_FLAGS=`). CGO_ENABLED=0: the static binary the image ships (make
# image), which make bench then measures; linked to libc it also mapped libc and the dynamic
# loader, 1.4 MB of every process's resident set.
BUILD_FLAGS ?= -ldflags='-s -w'
build:
	CGO_ENABLED=0 $(GO) build $(BUILD_FLAGS) -o $(BIN)/gateway .

# One line per step with its duration: the build here (a first build compiles every package,
# later ones reuse Go's build cache), then gateway dev's own (PostgreSQL, migrations,
# listeners, demo data), then the addresses to try.
run: deps-run
	@echo "run: building bin/gateway (go build; the first build on a machine takes a minute or more)"
	@start=$$(date +%s); CGO_ENABLED=0 $(GO) build $(BUILD_FLAGS) -o $(BIN)/gateway . || exit 1; \
	  printf 'run: %-58s %6ss\n' "built bin/gateway" "$$(( $$(date +%s) - start ))"
	$(BIN)/gateway dev

# The gateway against a bare reverse proxy at saturation (canned 0 ms upstream, 64 clients):
# CPU per request, req/s, p50/p99, PostgreSQL CPU, transactions and durable-charge wait per
# request, peak RSS and 25 MiB uploads (see core/bench; -uploads 0 skips those).
# Flags: make bench BENCH_FLAGS='-duration 3s -warmup 1s'; -layout many on 4+ CPUs gives
# PostgreSQL, the upstreams and the load generator CPUs of their own (README, Development);
# -scenarios budget,routes,chain (or all) adds the gateway-against-itself pairs of issues 32-34;
# -scenarios batch (or all) the batch of issue 37 (-batch-items, default 10000).
.PHONY: bench
bench: build
	$(BIN)/gateway bench $(BENCH_FLAGS)

# deps first: the TypeScript SDK suite (testdata/tsclients) needs its npm packages, which go
# test would skip with a message it hides for a passing package (GATEWAY_DEPS=skip says so).
# deploy/ is its own module (image tool, Helm chart test): ./... does not enter it.
test:
	@$(DEPS) test
	$(GO) test -count=1 -timeout 15m ./...
	cd deploy && $(GO) test -count=1 -timeout 5m ./...

# The container image, built without a daemon (deploy/image): the static binary on a minimal
# non-root base, reproducible from SOURCE_DATE_EPOCH (the last commit's time by default).
# IMAGE_FLAGS='-format oci -o bin/gateway-oci' writes an OCI layout instead.
# The version, commit and commit date go into the binary (`gateway version`) and the image's
# OCI labels; the static build has no VCS stamp of its own (-buildvcs=false keeps it reproducible).
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BUILD_DATE ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null | grep . || echo unknown)
VERSION_X = -X modelgateway/core/version.Version=$(VERSION) -X modelgateway/core/version.Commit=$(COMMIT) -X modelgateway/core/version.Date=$(BUILD_DATE)
IMAGE_FLAGS ?= -o $(BIN)/gateway-image.tar
image:
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags='-s -w -buildid= $(VERSION_X)' -o $(BIN)/gateway-static .
	cd deploy && SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run ./image -binary $(BIN)/gateway-static \
		-label org.opencontainers.image.version=$(VERSION) -label org.opencontainers.image.revision=$(COMMIT) \
		-label org.opencontainers.image.created=$(BUILD_DATE) $(IMAGE_FLAGS)

# Every fuzz target (each decoder of client input and of upstream answers) for FUZZTIME,
# then the executions of each; `make test` runs their seed corpora only. The default is a
# count, 10^6 executions per target, whatever the machine's speed; a duration works too
# (FUZZTIME=3m), though Go before 1.27 may then fail a target at the deadline with a bare
# "context deadline exceeded" (go.dev/issue/75804). CI runs a short count.
FUZZTIME ?= 1000000x
.PHONY: fuzz
fuzz:
	@for dir in $$(grep -rl '^func Fuzz' --include='*_test.go' . | xargs -n1 dirname | sort -u); do \
	  for fz in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go | cut -d' ' -f2); do \
	    out=$$($(GO) test -run '^$$' -fuzz "^$$fz\$$" -fuzztime $(FUZZTIME) $$dir 2>&1) || { echo "$$out"; exit 1; }; \
	    printf '%-34s %-22s %12s executions\n' "$$dir" "$$fz" "$$(echo "$$out" | grep -o 'execs: [0-9]*' | tail -1 | cut -d' ' -f2)"; \
	  done; \
	done

# The randomized fault soak of issue 13 at full length: 10^5 operations over two replicas
# (make test runs it for a few seconds). GATEWAY_SOAK_SEED=<seed> replays a run.
.PHONY: soak
soak:
	GATEWAY_SOAK_OPS=100000 $(GO) test -count=1 -timeout 90m -run '^TestFaultSoak$$' -v .

check: fmt lint vet imports sizes gen-check

$(GREMLINS):
	GOBIN=$(BIN) $(GO) install github.com/go-gremlins/gremlins/cmd/gremlins@$(GREMLINS_VERSION)

# Mutation testing of the code that decides money and access: each package's own tests must
# kill >= 90 % of the mutants they cover and cover >= 80 % (mutants that cannot be killed are
# listed with their reason in testdata/mutation-equivalents.md). One package at a time, one
# worker, at the lowest priority: it is CPU-heavy. In core/rpc only the admission and pricing
# files (MUTATE_RPC_FILES) count: every other file of the package is excluded by name.
# GOFLAGS=-count=1: gremlins bounds each mutant's test run by the coverage run's time, which
# go test's cache would make a fraction of a second (every slow mutant then "timed out").
MUTATE_PKGS := core/billing core/metering core/snapshot core/keys
# metadata.go and outcome.go are the request-id/metadata and outcome halves of what were
# errors.go and generate.go.
MUTATE_RPC_FILES := billed.go catalog.go core.go errors.go metadata.go generate.go outcome.go keylimits.go prebody.go
MUTATE_RPC_SKIP := $(foreach f,$(filter-out %_test.go $(MUTATE_RPC_FILES),$(notdir $(wildcard core/rpc/*.go))),-E '(^|/)$(subst .,\.,$(f))$$')
MUTATE_FLAGS ?= --workers 1 --test-cpu 1 --timeout-coefficient 20 --config $(CURDIR)/testdata/gremlins.yaml
.PHONY: mutate
mutate: $(GREMLINS)
	@fail=""; \
	for p in $(MUTATE_PKGS); do echo "== $$p"; GOFLAGS=-count=1 nice -n 19 $(GREMLINS) unleash $(MUTATE_FLAGS) ./$$p || fail="$$fail $$p"; done; \
	echo "== core/rpc (admission and pricing)"; \
	GOFLAGS=-count=1 nice -n 19 $(GREMLINS) unleash $(MUTATE_FLAGS) $(MUTATE_RPC_SKIP) ./core/rpc || fail="$$fail core/rpc"; \
	[ -z "$$fail" ] || { echo "below the mutation thresholds:$$fail"; exit 1; }

$(BUF):
	GOBIN=$(BIN) $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)

generate: $(BUF)
	$(BUF) generate

lint: $(BUF)
	$(BUF) lint

vet:
	$(GO) vet ./...
	cd deploy && $(GO) vet ./...

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/')); [ -z "$$out" ] || { echo "gofmt needed:"; echo "$$out"; exit 1; }

# Import rules of the design: front and realtime reach core only through gen/ and core/wire
# (so do the admin and verify CLIs, the chat bot and the status site, all fronts); core never
# imports front or realtime; provider adapters never touch the store; the chat bot
# (front/bot) holds no database connection; the upstream simulator shares no gateway code
# (it is an outside server); route selection (core/routing) and the capability prober
# (core/verify) stay below core/rpc, and routing below the prober; the request path
# (core/rpc) and the operator's service (core/admin) are siblings that import each other in
# neither direction (what both need lives below them); the bench drives the binary from
# outside, with only a throwaway PostgreSQL of its own. Both outside parts may read and write
# their sockets with core/wire/rawsock, which carries bytes unchanged and knows no protocol.
imports:
	@$(GO) list -f '{{.ImportPath}} {{join .Imports " "}}' ./... | awk '\
	  { pkg=$$1; for (i=2;i<=NF;i++) { imp=$$i; \
	    if (pkg ~ /^modelgateway\/front\/bot(\/|$$)/ && imp ~ /^github.com\/jackc\//) bad=bad "\n  " pkg " imports " imp " (the bot has no database connection)"; \
	    if (imp !~ /^modelgateway\//) continue; \
	    if (pkg ~ /^modelgateway\/(front|realtime)(\/|$$)/ && imp ~ /^modelgateway\/core\// && imp !~ /^modelgateway\/core\/wire(\/|$$)/) bad=bad "\n  " pkg " imports " imp; \
	    if (pkg ~ /^modelgateway\/core(\/|$$)/ && imp ~ /^modelgateway\/(front|realtime)(\/|$$)/) bad=bad "\n  " pkg " imports " imp; \
	    if (pkg ~ /^modelgateway\/core\/provider(\/|$$)/ && imp ~ /^modelgateway\/core\/store(\/|$$)/) bad=bad "\n  " pkg " imports " imp; \
	    if (imp == "modelgateway/core/wire/rawsock" && pkg ~ /^modelgateway\/core\/(simulator|bench)(\/|$$)/) continue; \
	    if (pkg ~ /^modelgateway\/core\/simulator(\/|$$)/) bad=bad "\n  " pkg " imports " imp " (the simulator is an outside server)"; \
	    if (pkg ~ /^modelgateway\/core\/(routing|verify)(\/|$$)/ && imp ~ /^modelgateway\/core\/rpc(\/|$$)/) bad=bad "\n  " pkg " imports " imp; \
	    if (pkg ~ /^modelgateway\/core\/routing(\/|$$)/ && imp ~ /^modelgateway\/core\/verify(\/|$$)/) bad=bad "\n  " pkg " imports " imp; \
	    if (pkg ~ /^modelgateway\/core\/rpc(\/|$$)/ && imp ~ /^modelgateway\/core\/admin(\/|$$)/) bad=bad "\n  " pkg " imports " imp " (the request path does not import the admin service)"; \
	    if (pkg ~ /^modelgateway\/core\/admin(\/|$$)/ && imp ~ /^modelgateway\/core\/rpc(\/|$$)/) bad=bad "\n  " pkg " imports " imp " (the admin service shares only what lies below core/rpc)"; \
	    if (pkg ~ /^modelgateway\/core\/bench(\/|$$)/ && imp != "modelgateway/core/store/pgcluster") bad=bad "\n  " pkg " imports " imp " (the bench drives the binary from outside)"; } } \
	  END { if (bad != "") { print "import rule violations:" bad; exit 1 } }'

# No non-test Go file over 500 lines outside gen/.
.PHONY: sizes
sizes:
	@out=$$(for f in $$(git ls-files '*.go' | grep -v '^gen/' | grep -v '_test\.go$$'); do n=$$(wc -l < $$f); [ $$n -le 500 ] || echo "  $$f: $$n lines"; done); \
	[ -z "$$out" ] || { echo "Go files over 500 lines:"; echo "$$out"; exit 1; }

# gen/ must be exactly what `make generate` produces from proto/.
gen-check: $(BUF)
	@rm -rf $(CURDIR)/.gen-check && mkdir -p $(CURDIR)/.gen-check
	$(BUF) generate -o $(CURDIR)/.gen-check
	@diff -r gen $(CURDIR)/.gen-check/gen > /dev/null || { echo "gen/ is stale: run make generate and commit"; diff -r gen $(CURDIR)/.gen-check/gen | head -20; rm -rf $(CURDIR)/.gen-check; exit 1; }
	@rm -rf $(CURDIR)/.gen-check

clean:
	rm -rf $(BIN) .gen-check
