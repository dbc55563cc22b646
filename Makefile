# Summa: a segment-based search engine and its Kubernetes operator.

GO ?= go
FUZZTIME ?= 2000x

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-12s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: build
build: ## Build every package and command into bin/.
	$(GO) build ./...
	@mkdir -p bin
	@if [ -d cmd ]; then $(GO) build -o bin/ ./cmd/...; fi

.PHONY: vet
vet: ## go vet and gofmt check.
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

.PHONY: test
test: vet ## Run every test (unit, rule, crash/fault harness) and a short fuzz run.
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -race -short ./engine/lifecycle/ ./engine/index/ ./engine/registry/ ./engine/optimizer/
	$(MAKE) fuzz FUZZTIME=$(FUZZTIME)

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME iterations (default 2000x: count-based, since time-based runs can end in a spurious deadline error on Go 1.26).
	@set -e; for pkg in $$($(GO) list ./engine/...); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/^func //'); do \
	    echo "fuzz $$pkg $$f"; \
	    $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=50x $$pkg; \
	  done; \
	done

##@ Run

.PHONY: run
run: ## Start summa-server locally (no cluster), load sample text, serve until Ctrl-C.
	hack/run-local.sh

.PHONY: demo
demo: ## Index real text into a temporary directory and query it (no cluster needed).
	$(GO) run ./cmd/summa-demo
