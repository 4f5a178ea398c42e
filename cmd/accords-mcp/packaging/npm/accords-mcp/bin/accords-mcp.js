#!/usr/bin/env node
// Starts the accords-mcp binary of this machine's platform package
// (accords-mcp-<platform>-<arch>, an optional dependency npm installs only
// where its os and cpu match) with this process's arguments, stdio and
// environment, and exits with its status. Signals the launcher receives are
// passed on, so a client stopping `npx accords-mcp` stops the server.
"use strict";

const { spawn } = require("node:child_process");
const path = require("node:path");

const pkg = `accords-mcp-${process.platform}-${process.arch}`;
const exe = process.platform === "win32" ? "accords-mcp.exe" : "accords-mcp";

let binary;
try {
  binary = path.join(path.dirname(require.resolve(`${pkg}/package.json`)), "bin", exe);
} catch {
  process.stderr.write(
    `accords-mcp: no binary for ${process.platform}-${process.arch}: the optional package ${pkg} is not installed.\n` +
      "Reinstall without --no-optional / --omit=optional, or download a release archive from\n" +
      "https://github.com/accordsai/accords-mcp/releases\n",
  );
  process.exit(1);
}

const child = spawn(binary, process.argv.slice(2), { stdio: "inherit" });
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(sig, () => child.kill(sig));
}
child.on("error", (err) => {
  process.stderr.write(`accords-mcp: cannot start ${binary}: ${err.message}\n`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
