// Package tssdk tests accords-mcp with the TypeScript MCP SDK's client
// (@modelcontextprotocol/sdk from npm, pinned with Ajv by package.json and
// package-lock.json beside this file): the SDK lists the tools, parses them,
// compiles every output schema and validates every result against it, Ajv
// strict mode compiles every schema too, and a dynamic session grows with
// notifications/tools/list_changed. It needs -tags=clients; .ci/extra runs
// it. The packages are installed into a cache outside the repository; the
// test skips only when the npm registry cannot be reached.
//go:build clients

package tssdk
