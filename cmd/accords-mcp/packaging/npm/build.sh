#!/usr/bin/env bash
# Builds the npm launcher into dist/: accords-mcp-<version>.tgz, whose bin
# (bin/accords-mcp.js) starts the binary of the matching platform package,
# and one accords-mcp-<os>-<cpu>-<version>.tgz per platform holding that
# binary, limited by "os" and "cpu" so npm installs only the one that fits
# (the launcher lists them all as optionalDependencies). The version is the
# launcher's package.json version, which a test keeps equal to the binary's.
#
#   cmd/accords-mcp/packaging/npm/build.sh                                  # run by `make npm`: all six platforms
#   NPM_PLATFORMS="linux-x64" cmd/accords-mcp/packaging/npm/build.sh        # only some
set -euo pipefail
cd "$(dirname "$0")/../../../.."

GO="${GO:-go}"
NPM_PLATFORMS="${NPM_PLATFORMS:-linux-x64 linux-arm64 darwin-x64 darwin-arm64 win32-x64 win32-arm64}"
version="$(jq -r .version cmd/accords-mcp/packaging/npm/accords-mcp/package.json)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p dist

for p in $NPM_PLATFORMS; do
  os="${p%-*}"
  cpu="${p#*-}"
  case "$os" in win32) goos=windows exe=accords-mcp.exe ;; *) goos="$os" exe=accords-mcp ;; esac
  case "$cpu" in x64) goarch=amd64 ;; *) goarch="$cpu" ;; esac
  dir="$work/accords-mcp-$p"
  echo "building $goos/$goarch for accords-mcp-$p"
  CGO_ENABLED=0 GOOS="$goos" GOARCH="$goarch" "$GO" build -trimpath -ldflags "-s -w ${LDFLAGS:-}" \
    -o "$dir/bin/$exe" ./cmd/accords-mcp
  jq -n --arg name "accords-mcp-$p" --arg version "$version" --arg os "$os" --arg cpu "$cpu" '{
    name: $name, version: $version,
    description: "The accords-mcp binary for \($os)-\($cpu), started by the accords-mcp package",
    repository: {type: "git", url: "git+https://github.com/accordsai/accords-mcp.git"},
    os: [$os], cpu: [$cpu], files: ["bin/"]
  }' >"$dir/package.json"
  (cd "$dir" && npm pack --silent --pack-destination "$OLDPWD/dist" >/dev/null)
done

cp -R cmd/accords-mcp/packaging/npm/accords-mcp "$work/accords-mcp"
(cd "$work/accords-mcp" && npm pack --silent --pack-destination "$OLDPWD/dist" >/dev/null)
ls -1 dist/accords-mcp-*"$version".tgz
