// The TypeScript SDK client as an MCP host runs it: connect (Streamable HTTP
// or stdio), make one call that waits on an approval, list the tools and
// call each one with no arguments. Prints one JSON object on stdout;
// the Go test (clients_test.go) judges it.
//
//   node client.mjs http http://127.0.0.1:PORT/v1/mcp
//   node client.mjs stdio /path/to/accords-mcp
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [mode, target] = process.argv.slice(2);
const transport =
  mode === "http"
    ? new StreamableHTTPClientTransport(new URL(target))
    : new StdioClientTransport({ command: target, args: ["serve"], env: process.env, stderr: "inherit" });

// The client tells the transport the version it negotiated.
let negotiated = "";
const setVersion = transport.setProtocolVersion?.bind(transport);
transport.setProtocolVersion = (v) => {
  negotiated = v;
  setVersion?.(v);
};

const client = new Client({ name: "accords-ts-client", version: "1.0.0" }, { capabilities: {} });
await client.connect(transport);

const out = { protocolVersion: negotiated, server: client.getServerVersion(), tools: [], calls: [] };

// First, while the session is configured (vaultclaw_session_clear, called
// below with the rest, ends it).
const send = {
  request: {
    connector_id: "google", verb: "google.gmail.send.v1", policy_version: "1",
    request: { user_id: "me", to: ["bob@example.com"], subject: "Q3 numbers", text_plain: "Attached." },
  },
};
out.handoff = await client.callTool({ name: "vaultclaw_connector_execute_job", arguments: send });

const { tools } = await client.listTools();
out.tools = tools.map((t) => t.name);
for (const t of tools) {
  try {
    const r = await client.callTool({ name: t.name, arguments: {} });
    const env = r.structuredContent ?? {};
    out.calls.push({ name: t.name, ok: env.ok === true, isError: r.isError === true, code: env.error?.code ?? "", items: r.content.length });
  } catch (e) {
    out.calls.push({ name: t.name, error: String(e) });
  }
}

await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
