# `make test` is the README's test command and what CI runs.
GO ?= go

.PHONY: test build vet fmt-check bench

test: fmt-check vet
	$(GO) test -race -count=1 ./...
	$(GO) test -race -count=1 -tags=integration -run '^TestSmoke_' ./test/smoke/

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

build:
	$(GO) build -o bin/accords-mcp ./cmd/accords-mcp

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
