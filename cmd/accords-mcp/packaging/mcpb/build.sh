#!/usr/bin/env bash
# Builds dist/accords-mcp.mcpb, the Claude Desktop bundle (manifest 0.3,
# server.type binary): one binary per operating system, each chosen by the
# manifest's platform_overrides. macOS and Windows get the amd64 build, which
# also runs on their arm64 machines (Rosetta 2, Windows' x64 emulation);
# Linux gets amd64. The manifest is validated and the bundle packed with the
# @anthropic-ai/mcpb CLI, installed from npm into a temporary folder, never
# into the repository. Also writes dist/server.json: the root server.json
# with the bundle's fileSha256, which the MCP Registry requires for an mcpb
# package and which only exists once the bundle does.
#
#   cmd/accords-mcp/packaging/mcpb/build.sh      # run by `make mcpb`; LDFLAGS and GO come from make
set -euo pipefail
cd "$(dirname "$0")/../../../.."

GO="${GO:-go}"
MCPB_VERSION="${MCPB_VERSION:-2.1.2}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

stage="$work/bundle"
mkdir -p "$stage/server" dist
cp cmd/accords-mcp/packaging/mcpb/manifest.json "$stage/manifest.json"
cp README.md "$stage/README.md"
for target in linux/amd64/linux/accords-mcp darwin/amd64/darwin/accords-mcp windows/amd64/win32/accords-mcp.exe; do
  IFS=/ read -r goos goarch dir exe <<<"$target"
  echo "building $goos/$goarch"
  CGO_ENABLED=0 GOOS="$goos" GOARCH="$goarch" "$GO" build -trimpath -ldflags "-s -w ${LDFLAGS:-}" \
    -o "$stage/server/$dir/$exe" ./cmd/accords-mcp
done

echo "installing @anthropic-ai/mcpb@$MCPB_VERSION into a temporary folder"
npm install --prefix "$work/cli" --no-audit --no-fund --loglevel=error "@anthropic-ai/mcpb@$MCPB_VERSION" >/dev/null
mcpb="$work/cli/node_modules/.bin/mcpb"
"$mcpb" validate "$stage/manifest.json"
rm -f dist/accords-mcp.mcpb
"$mcpb" pack "$stage" dist/accords-mcp.mcpb

sum="$( (sha256sum dist/accords-mcp.mcpb 2>/dev/null || shasum -a 256 dist/accords-mcp.mcpb) | cut -d' ' -f1)"
jq --arg sum "$sum" '(.packages[] | select(.registryType == "mcpb")) += {fileSha256: $sum}' server.json >dist/server.json
echo "wrote dist/accords-mcp.mcpb (sha256 $sum) and dist/server.json"
