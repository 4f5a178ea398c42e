# `make test` is the README's test command and what CI runs.
GO ?= go

# golangci-lint is pinned: another version reports other findings. CI starts
# with only Go, so `make lint` installs the pinned version when it is absent.
GOLANGCI_LINT_VERSION := v2.15.0
GOBIN_DIR := $(firstword $(subst :, ,$(shell $(GO) env GOPATH)))/bin
GOLANGCI_LINT ?= $(GOBIN_DIR)/golangci-lint

.PHONY: test build vet fmt-check lint bench

test: fmt-check vet lint
	$(GO) test -race -count=1 ./...
	$(GO) test -race -count=1 -tags=integration -run '^TestSmoke_' ./test/smoke/

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

lint:
	@command -v "$(GOLANGCI_LINT)" >/dev/null 2>&1 || { \
		echo "installing golangci-lint $(GOLANGCI_LINT_VERSION) into $(GOBIN_DIR)"; \
		GOBIN="$(GOBIN_DIR)" $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION); \
	}
	$(GOLANGCI_LINT) run ./...

build:
	$(GO) build -o bin/accords-mcp ./cmd/accords-mcp

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
