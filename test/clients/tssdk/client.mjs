// The TypeScript MCP SDK's client against the accords-mcp binary: it lists
// the tools (the SDK parses them and compiles every output schema with Ajv),
// compiles every schema again with Ajv in strict mode (draft-07 and
// 2020-12), calls a representative set of tools, failures included (the SDK
// validates each structuredContent against the tool's output schema and
// throws when it does not match), and grows a dynamic session, waiting for
// notifications/tools/list_changed, then does the same with two launches
// attached to one daemon. It prints one JSON report on stdout;
// test/clients/tssdk/tssdk_test.go runs it and judges the report.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import Ajv from 'ajv';
import Ajv2020 from 'ajv/dist/2020.js';

const [bin, dbDir] = process.argv.slice(2);
const baseEnv = JSON.parse(process.env.ACCORDS_SERVER_ENV || '{}');
const report = { errors: [], calls: [], toolCount: 0, dynamic: {} };
const fail = (msg) => report.errors.push(msg);

async function connect(name, extra) {
  const transport = new StdioClientTransport({
    command: bin, args: ['serve'], stderr: 'ignore',
    env: { ...baseEnv, ACCORDS_MCP_DB: `${dbDir}/${name}.db`, ...extra },
  });
  const client = new Client({ name: 'accords-tssdk-test', version: '1' });
  await client.connect(transport);
  return client;
}

function strictCompile(tools) {
  const out = new Map();
  for (const t of tools) {
    for (const [kind, schema] of [['input', t.inputSchema], ['output', t.outputSchema]]) {
      for (const [dialect, make] of [['ajv-strict', () => new Ajv({ strict: true, allErrors: true })],
        ['ajv2020-strict', () => new Ajv2020({ strict: true, allErrors: true })]]) {
        try {
          const v = make().compile(schema);
          if (kind === 'output' && dialect === 'ajv-strict') out.set(t.name, v);
        } catch (e) {
          fail(`${dialect} refuses the ${kind} schema of ${t.name}: ${e.message}`);
        }
      }
    }
  }
  return out;
}

async function main() {
  const c = await connect('full', { ACCORDS_MCP_TOOLSETS: 'all' });
  const { tools } = await c.listTools();
  report.toolCount = tools.length;
  const strict = strictCompile(tools);

  const call = async (name, args, want) => {
    try {
      const r = await c.callTool({ name, arguments: args });
      const env = r.structuredContent;
      const v = strict.get(name);
      if (v && !v(env)) fail(`${name}: Ajv strict rejects the result: ${JSON.stringify(v.errors)}`);
      const got = env.ok ? 'ok' : env.error.code;
      if (got !== want) fail(`${name}: got ${got}, want ${want}: ${JSON.stringify(env.error)}`);
      if (!!r.isError === env.ok) fail(`${name}: isError ${r.isError} with ok ${env.ok}`);
      report.calls.push({ name, result: got, warnings: env.meta.warnings ?? null, message: env.error?.message ?? '' });
    } catch (e) {
      fail(`${name}: ${e.message}`);
    }
  };
  const list = { connector_id: 'google', verb: 'google.gmail.messages.list', policy_version: '1', request: { user_id: 'me' } };
  const send = { connector_id: 'google', verb: 'google.gmail.send.v1', policy_version: '1',
    request: { user_id: 'me', to: ['bob@example.com'], subject: 'Hi', text_plain: 'Hello.' } };
  await call('vaultclaw_session_status', {}, 'ok');
  await call('vaultclaw_connectors_list', {}, 'ok');
  await call('vaultclaw_connector_get', { connector_id: 'nope' }, 'MCP_NOT_FOUND');
  await call('vaultclaw_connector_validate', { request: list }, 'ok');
  await call('vaultclaw_connector_execute', { request: list }, 'ok');
  await call('vaultclaw_connector_execute_job', { request: send }, 'MCP_APPROVAL_REQUIRED');
  await call('vaultclaw_approvals_pending_list', {}, 'ok');
  await call('vaultclaw_approval_handles_list', {}, 'ok');
  await call('vaultclaw_job_get', { job_id: 'job_nope' }, 'MCP_NOT_FOUND');
  await call('vaultclaw_document_types_latest', { type_id: 'identity.passport' }, 'ok');
  await call('vaultclaw_passport_email_workflow', { request_text: 'email my passport to eve@example.com', execute: false }, 'ok');
  await call('vaultclaw_recipes_search', { query: 'send email', limt: 3 }, 'ok');
  await call('vaultclaw_route_resolve', { request_text: 'email bob@example.com the quarterly numbers' }, 'ok');
  await call('vaultclaw_cookbooks_list', { limit: 2 }, 'ok');
  await call('vaultclaw_template_render', { cookbook_id: 'no.such', template_id: 'x', inputs: {} }, 'MCP_CATALOG_NOT_FOUND');
  await call('vaultclaw_catalog_sources_list', {}, 'ok');
  await call('vaultclaw_audit_receipts_list', { limit: 3 }, 'ok');
  await call('vaultclaw_session_configure', {}, 'MCP_VALIDATION_ERROR');
  await c.close();

  const d = await connect('dynamic', { ACCORDS_MCP_DYNAMIC_TOOLSETS: 'true' });
  let notified = 0;
  let wake = () => {};
  d.setNotificationHandler(ToolListChangedNotificationSchema, () => { notified++; wake(); });
  const start = (await d.listTools()).tools;
  report.dynamic.start = start.map((t) => t.name).sort();
  report.dynamic.startBytes = JSON.stringify({ tools: start }).length;
  const en = await d.callTool({ name: 'vaultclaw_toolset_enable', arguments: { toolset: 'approvals' } });
  if (!en.structuredContent.ok) fail(`toolset_enable: ${JSON.stringify(en.structuredContent.error)}`);
  await new Promise((resolve) => {
    if (notified > 0) return resolve();
    wake = resolve;
    setTimeout(resolve, 10000);
  });
  report.dynamic.notified = notified;
  report.dynamic.after = (await d.listTools()).tools.map((t) => t.name).sort();
  strictCompile((await d.listTools()).tools);
  await d.close();

  // Two launches attached to one daemon, as clients run accords-mcp by
  // default: enabling a toolset in one changes its list alone.
  const attached = { ACCORDS_MCP_STANDALONE: 'false', ACCORDS_MCP_DYNAMIC_TOOLSETS: 'true' };
  const one = await connect('attached', attached);
  const two = await connect('attached', attached);
  const counts = [0, 0];
  let wakeOne = () => {};
  one.setNotificationHandler(ToolListChangedNotificationSchema, () => { counts[0]++; wakeOne(); });
  two.setNotificationHandler(ToolListChangedNotificationSchema, () => { counts[1]++; });
  const names = async (cl) => (await cl.listTools()).tools.map((t) => t.name).sort();
  report.attached = { start: [await names(one), await names(two)] };
  const en1 = await one.callTool({ name: 'vaultclaw_toolset_enable', arguments: { toolset: 'vault' } });
  if (!en1.structuredContent.ok) fail(`attached toolset_enable: ${JSON.stringify(en1.structuredContent.error)}`);
  await new Promise((resolve) => {
    if (counts[0] > 0) return resolve();
    wakeOne = resolve;
    setTimeout(resolve, 10000);
  });
  await new Promise((resolve) => setTimeout(resolve, 500)); // a stray notification to two would be here by now
  report.attached.notified = [...counts];
  report.attached.after = [await names(one), await names(two)];
  await one.close();
  await two.close();
}

main().then(() => {
  process.stdout.write(JSON.stringify(report) + '\n');
}, (e) => {
  fail(`client failed: ${e.stack || e}`);
  process.stdout.write(JSON.stringify(report) + '\n');
  process.exitCode = 1;
});
