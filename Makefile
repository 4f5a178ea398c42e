# `make test` is the README's test command and what CI runs.
GO ?= go

# golangci-lint is pinned: another version reports other findings. CI starts
# with only Go, so `make lint` installs the pinned version when it is absent.
# It also lints the Windows build (D33: built and linted there, not run);
# the tests are unix-only, so that pass leaves them out.
GOLANGCI_LINT_VERSION := v2.15.0
GOBIN_DIR := $(firstword $(subst :, ,$(shell $(GO) env GOPATH)))/bin
GOLANGCI_LINT ?= $(GOBIN_DIR)/golangci-lint

# make install PREFIX=... installs the binary and its shell completions;
# DESTDIR is prepended for packaging.
PREFIX ?= /usr/local
BINDIR := $(DESTDIR)$(PREFIX)/bin
SHAREDIR := $(DESTDIR)$(PREFIX)/share

# The version, commit and build date `accords-mcp version` prints.
VERSION_PKG := github.com/accordsai/accords-mcp/platform/version
COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
BUILD_DATE := $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X $(VERSION_PKG).BuildDate=$(BUILD_DATE) $(if $(COMMIT),-X $(VERSION_PKG).Commit=$(COMMIT))

.PHONY: test test-docs build install uninstall vet fmt-check lint bench mcpb npm

test: fmt-check vet lint
	$(GO) test -race -count=1 ./...
	$(GO) test -race -count=1 -tags=integration -run '^TestSmoke_' ./test/smoke/

# Runs every shell block of README.md and docs/*.md (test/docs): about two
# minutes, so CI runs it from .ci/extra rather than as part of make test.
test-docs:
	$(GO) test -count=1 -tags=docs ./test/docs/

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
	GOOS=windows $(GOLANGCI_LINT) run --tests=false ./...

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/accords-mcp ./cmd/accords-mcp

install: build
	install -d $(BINDIR) $(SHAREDIR)/bash-completion/completions $(SHAREDIR)/zsh/site-functions $(SHAREDIR)/fish/vendor_completions.d
	install -m 0755 bin/accords-mcp $(BINDIR)/accords-mcp
	bin/accords-mcp completion bash > $(SHAREDIR)/bash-completion/completions/accords-mcp
	bin/accords-mcp completion zsh > $(SHAREDIR)/zsh/site-functions/_accords-mcp
	bin/accords-mcp completion fish > $(SHAREDIR)/fish/vendor_completions.d/accords-mcp.fish

uninstall:
	rm -f $(BINDIR)/accords-mcp $(SHAREDIR)/bash-completion/completions/accords-mcp \
		$(SHAREDIR)/zsh/site-functions/_accords-mcp $(SHAREDIR)/fish/vendor_completions.d/accords-mcp.fish

# The Claude Desktop bundle (dist/accords-mcp.mcpb, plus dist/server.json
# with its sha256) and the npm launcher (dist/*.tgz); both need npm and jq.
# Their tests: go test -tags=packaging ./test/packaging/ (.ci/extra).
mcpb:
	GO='$(GO)' LDFLAGS='$(LDFLAGS)' cmd/accords-mcp/packaging/mcpb/build.sh

npm:
	GO='$(GO)' LDFLAGS='$(LDFLAGS)' cmd/accords-mcp/packaging/npm/build.sh

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
