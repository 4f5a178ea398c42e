#!/usr/bin/env bash
# Extra CI for reliability: the reliability-tagged tests (crash safety with
# 20 SIGKILLs, 16 concurrent HTTP clients for 20 s, Vault faults) under the
# race detector, then every fuzz target in the repository for FUZZTIME each
# (default 4000x: a count, not a duration, because a time-limited run can
# end in a spurious "context deadline exceeded" when the deadline falls while
# the workers are busy on a loaded machine). Called from .ci/run after the
# normal suite; about 5 minutes on 2 cores. Runs from the repository root.
#
#   scripts/ci-extra.sh                # everything
#   FUZZTIME=30s scripts/ci-extra.sh   # longer fuzzing
#   SKIP_FUZZ=1 scripts/ci-extra.sh    # reliability tests only
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZTIME="${FUZZTIME:-4000x}"
start=$(date +%s)

echo "== reliability tests (-race -tags=reliability)"
go test -race -tags=reliability -count=1 -timeout 20m ./reliability/...

if [ "${SKIP_FUZZ:-}" = "" ]; then
  # Every "func FuzzXxx(" in a _test.go file, as "package-dir name" pairs;
  # new targets are picked up without editing this script.
  mapfile -t targets < <(grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+\(' . \
    | grep -v '^./\.git/' \
    | sed -E 's#^(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]+)\($#\1 \2#' | sort -u)
  if [ "${#targets[@]}" -eq 0 ]; then
    echo "no fuzz targets found" >&2
    exit 1
  fi
  for t in "${targets[@]}"; do
    dir=${t% *}
    name=${t#* }
    echo "== fuzz $name in $dir for $FUZZTIME"
    go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$dir"
  done
fi

echo "ci-extra finished in $(( $(date +%s) - start ))s"
