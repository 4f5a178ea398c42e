#!/usr/bin/env bash
# Runs every performance benchmark the issues set targets for, in-process
# (go test -bench), COUNT times each (default 3; report the median), and
# prints the raw `go test` output. docs/performance.md lists what each line
# is checked against. Takes 10-20 minutes on 2 cores, mostly building the
# 10,000-bundle catalogs.
#
#   bench/bench-all.sh | tee bench.txt
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT="${COUNT:-3}"

failed=()
# run keeps going after a failing package so one failure does not hide the
# other figures; the script still exits 1 at the end.
run() {
  echo "== go test $*"
  go test -run '^$' -count "$COUNT" "$@" || failed+=("$*")
}

# Catalog: search, upsert, get at 1,000/10,000 (synthetic vocabulary) and
# search, render, upsert at 100/1,000/10,000 on the load tool's corpus.
run -bench 'BenchmarkSearch|BenchmarkUpsert|BenchmarkLoadCorpus' -benchtime 500x ./domain/catalog/
# Catalog start-up on an existing catalog and a full reindex.
run -bench 'BenchmarkOpen|BenchmarkReindex' -benchtime 3x ./domain/catalog/
# Route resolver: registry path, search fallback at 10,000 bundles, and
# both over the load corpus at 100/1,000/10,000.
run -bench 'BenchmarkResolve' -benchtime 1000x ./domain/routing/
# Gateway overhead on a cheap call, audit append, envelope path.
run -bench 'BenchmarkGatewayOverheadMedian|BenchmarkSessionStatus' -benchtime 2000x ./gateway/
run -bench 'BenchmarkAppend' -benchtime 2000x ./gateway/audit/
run -bench 'BenchmarkEnvelopePath' -benchtime 5000x ./tools/
# Argument digests for receipts, one pass against decoding; encoding an
# answer for stdio against the SDK's encoder.
run -bench 'BenchmarkSumArgs' -benchtime 20000x ./gateway/audit/
run -bench 'BenchmarkEncodeSearchAnswer' -benchtime 100000x ./transport/wire/

if [ "${#failed[@]}" -gt 0 ]; then
  printf 'FAILED: go test %s\n' "${failed[@]}" >&2
  exit 1
fi
