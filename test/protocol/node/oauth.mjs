// The TypeScript SDK client signs in by itself, as an MCP host does: its
// first request gets 401, the SDK discovers the protected-resource metadata
// and the provider from the challenge and starts the authorization code
// flow with PKCE; the "browser" here is fetch, which opens the provider's
// login page, submits the form and stops at the redirect to the client
// with the code. The SDK exchanges the code, then the client lists the
// tools and calls two. Prints one JSON object on stdout; the Go test
// (oauth_test.go) judges it.
//
//   node oauth.mjs http://127.0.0.1:PORT/v1/mcp CLIENT_ID REDIRECT_URI USERNAME PASSWORD
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const [endpoint, clientId, redirectUrl, username, password] = process.argv.slice(2);
const out = { pages: [] };

// follow fetches url and the redirects after it, without following a
// redirect to the client: returns the last response and its URL.
async function follow(url, init = {}) {
  let res = await fetch(url, { ...init, redirect: "manual" });
  while (res.status >= 300 && res.status < 400) {
    url = new URL(res.headers.get("location"), url);
    out.pages.push(`${res.status} ${url.origin}${url.pathname}`);
    if (url.href.startsWith(redirectUrl)) return { res, url };
    res = await fetch(url, { redirect: "manual" });
  }
  return { res, url: new URL(url) };
}

// signIn is the person at the browser: the login form, filled in.
async function signIn(authorizationUrl) {
  const page = await follow(authorizationUrl);
  const html = await page.res.text();
  if (page.res.status !== 200) throw new Error(`login page: ${page.res.status} ${html}`);
  const field = (re) => {
    const m = html.match(re);
    if (!m) throw new Error(`login page without ${re}: ${html}`);
    return m[1];
  };
  const action = new URL(field(/<form[^>]*action="([^"]+)"/), page.url);
  const form = new URLSearchParams({ authRequestID: field(/name="authRequestID" value="([^"]*)"/), username, password });
  const back = await follow(action, { method: "POST", body: form });
  if (!back.url.href.startsWith(redirectUrl)) {
    throw new Error(`the login did not return to the client: ${back.res.status} ${await back.res.text()}`);
  }
  const code = back.url.searchParams.get("code");
  if (!code) throw new Error(`no code in ${back.url}`);
  return code;
}

// An in-memory OAuthClientProvider for a client registered in advance (a
// public client: PKCE, no secret).
class Provider {
  constructor() {
    this.saved = {};
  }
  get redirectUrl() {
    return redirectUrl;
  }
  get clientMetadata() {
    return {
      client_name: "accords-protocol-test", redirect_uris: [redirectUrl],
      grant_types: ["authorization_code"], response_types: ["code"], token_endpoint_auth_method: "none",
    };
  }
  clientInformation() {
    return this.saved.client ?? { client_id: clientId };
  }
  saveClientInformation(info) {
    this.saved.client = info;
  }
  tokens() {
    return this.saved.tokens;
  }
  saveTokens(tokens) {
    this.saved.tokens = tokens;
  }
  saveCodeVerifier(v) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
  async redirectToAuthorization(url) {
    const q = url.searchParams;
    out.authorization = {
      endpoint: `${url.origin}${url.pathname}`, response_type: q.get("response_type"), client_id: q.get("client_id"),
      code_challenge_method: q.get("code_challenge_method"), code_challenge: !!q.get("code_challenge"),
      resource: q.get("resource"), scope: q.get("scope"),
    };
    this.code = await signIn(url);
  }
}

const provider = new Provider();
const connect = async () => {
  const transport = new StreamableHTTPClientTransport(new URL(endpoint), { authProvider: provider });
  const client = new Client({ name: "accords-oauth-client", version: "1.0.0" }, { capabilities: {} });
  await client.connect(transport);
  return client;
};

// Without a token: the SDK signs in and reports that it needs the code.
const transport = new StreamableHTTPClientTransport(new URL(endpoint), { authProvider: provider });
try {
  await new Client({ name: "accords-oauth-client", version: "1.0.0" }, { capabilities: {} }).connect(transport);
  out.connectedWithoutSignIn = true;
} catch (e) {
  if (!(e instanceof UnauthorizedError)) throw e;
  out.unauthorized = e.message;
}
if (!provider.code) throw new Error(`no authorization code: ${JSON.stringify(out)}`);
await transport.finishAuth(provider.code);
out.token = {
  type: provider.saved.tokens?.token_type,
  jwt: (provider.saved.tokens?.access_token ?? "").split(".").length === 3,
  expiresIn: provider.saved.tokens?.expires_in,
};

const client = await connect();
out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
out.calls = [];
for (const name of ["vaultclaw_session_status", "vaultclaw_audit_receipts_list"]) {
  const res = await client.callTool({ name, arguments: {} });
  out.calls.push({ name, isError: !!res.isError, ok: res.structuredContent?.ok === true });
}
await client.close();
console.log(JSON.stringify(out));
