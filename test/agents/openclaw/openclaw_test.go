//go:build agents

package openclaw

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/test/testbin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Names the test gives OpenClaw: the MCP server, the fake provider and its
// one model.
const (
	serverName = "accords"
	provider   = "accordsfake"
	modelID    = "scripted-tool-caller"
	// vaultURL is handed to accords-mcp as VC_BASE_URL; neither tool the
	// model calls contacts Vaultclaw, so nothing listens there.
	vaultURL = "http://127.0.0.1:18081"
)

// TestOpenClawAgentCallsAccordsTools runs one `openclaw agent --local`
// turn in which OpenClaw's embedded agent, driven by the fake model, calls
// vaultclaw_session_status and vaultclaw_recipes_search on accords-mcp,
// added with `openclaw mcp add` and launched by OpenClaw over stdio on the
// default database of a temporary HOME.
func TestOpenClawAgentCallsAccordsTools(t *testing.T) {
	rt := installRuntime(t)
	bin := testbin.AccordsMCP(t)

	home := tempHome(t)
	token := "vc_tok_openclaw_" + randomHex(t, 12)
	apiKey := "sk-fake-" + randomHex(t, 8)

	model := newFakeModel(apiKey)
	srv := httptest.NewServer(model) // loopback only
	t.Cleanup(srv.Close)

	oc := openclawCLI{rt: rt, env: openclawEnv(rt, home, token)}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	oc.configure(ctx, t, srv.URL+"/v1", apiKey)
	addOut := oc.must(ctx, t, "mcp", "add", serverName, "--command", bin,
		"--env", "VC_AGENT_TOKEN=${VC_AGENT_TOKEN}", "--env", "VC_BASE_URL="+vaultURL)
	require.Contains(t, addOut, `Saved MCP server "`+serverName+`"`, "openclaw mcp add probes the server before saving")
	oc.checkSavedServer(ctx, t, bin)

	serverEnv := accordsEnv(home, token)
	requireSharedDaemon(t, bin, serverEnv)
	t.Cleanup(func() { stopDaemon(t, bin, serverEnv) })
	second := startPeer(t, bin, serverEnv)
	second.run()

	runStart := time.Now()
	args := []string{"agent", "--local", "--json", "--agent", "main", "--timeout", "300",
		"--message", "Check my Vaultclaw session, then find a recipe to send an email."}
	stdout, stderr, err := oc.run(ctx, args...)
	runEnd := time.Now()
	require.NoError(t, err, describeRun(args, err, stdout, stderr))
	defer func() {
		// OpenClaw logs an MCP server that failed to start and runs on
		// without its tools; its stderr says why.
		if t.Failed() {
			t.Logf("openclaw agent stderr:\n%s", tail(stderr, 8000))
		}
	}()
	t.Logf("openclaw agent --local took %s", runEnd.Sub(runStart).Round(10*time.Millisecond))

	peerCalls := second.stop()
	n, err := summarize(peerCalls, runStart, runEnd)
	require.NoError(t, err, "second stdio client (stderr: %s)", stderrTail(second.stderr))
	t.Logf("second stdio client: %d calls, all ok, during the OpenClaw run", n)

	out := parseAgentOutput(t, stdout)
	reqs := checkModelSaw(t, model, token)
	checkAgentOutput(t, out, reqs)
	checkAudit(t, bin, serverEnv, peerCalls)
}

// openclawEnv is the whole environment of every openclaw command: nothing
// of the caller's leaks in (no XDG_* paths, no provider keys, no config of
// the real HOME). VC_AGENT_TOKEN reaches accords-mcp only through the
// `${VC_AGENT_TOKEN}` reference in the saved server's env.
func openclawEnv(rt agentRuntime, home, token string) []string {
	return []string{
		"HOME=" + home,
		"PATH=" + rt.nodeDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"TMPDIR=" + filepath.Join(home, "tmp"),
		"LANG=C.UTF-8",
		"NO_COLOR=1",
		// No update check or telemetry request from a test run.
		"OPENCLAW_NO_AUTO_UPDATE=1",
		"VC_AGENT_TOKEN=" + token,
	}
}

// accordsEnv is what OpenClaw gives the server it launches (HOME and PATH
// from its default set, plus the saved env), for the test's own launches
// on the same default database.
func accordsEnv(home, token string) []string {
	return []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"VC_AGENT_TOKEN=" + token,
		"VC_BASE_URL=" + vaultURL,
	}
}

type openclawCLI struct {
	rt  agentRuntime
	env []string
}

func (c openclawCLI) run(ctx context.Context, args ...string) ([]byte, []byte, error) {
	return c.runStdin(ctx, nil, args...)
}

func (c openclawCLI) runStdin(ctx context.Context, stdin []byte, args ...string) ([]byte, []byte, error) {
	cmd := exec.CommandContext(ctx, c.rt.node, append([]string{c.rt.entry}, args...)...)
	cmd.Env = c.env
	cmd.Dir = envValue(c.env, "HOME")
	cmd.WaitDelay = 10 * time.Second
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.Bytes(), stderr.Bytes(), err
}

func (c openclawCLI) must(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := c.run(ctx, args...)
	require.NoError(t, err, describeRun(args, err, stdout, stderr))
	return string(stdout)
}

// configure points OpenClaw at the fake model with one validated
// `config patch`: a custom provider on the openai-completions adapter with
// a dummy key, that provider's model as the default, and Tool Search off
// so MCP tools reach the model as plain functions (by default OpenClaw
// 2026.9 hides them behind tool_search/tool_call).
func (c openclawCLI) configure(ctx context.Context, t *testing.T, baseURL, apiKey string) {
	t.Helper()
	patch := map[string]any{
		"models": map[string]any{
			"providers": map[string]any{
				provider: map[string]any{
					"baseUrl": baseURL,
					"apiKey":  apiKey,
					"api":     "openai-completions",
					"models": []any{map[string]any{
						"id": modelID, "name": "Scripted tool caller", "reasoning": false,
						"input": []string{"text"}, "contextWindow": 128000, "maxTokens": 4096,
					}},
				},
			},
		},
		"agents": map[string]any{"defaults": map[string]any{"model": provider + "/" + modelID}},
		"tools":  map[string]any{"toolSearch": false},
	}
	body, err := json.Marshal(patch)
	require.NoError(t, err)
	args := []string{"config", "patch", "--stdin"}
	stdout, stderr, err := c.runStdin(ctx, body, args...)
	require.NoError(t, err, describeRun(args, err, stdout, stderr))
	c.must(ctx, t, "config", "validate")
}

// checkSavedServer reads the definition back: a native stdio server under
// mcp.servers with the command and env the test gave.
func (c openclawCLI) checkSavedServer(ctx context.Context, t *testing.T, bin string) {
	t.Helper()
	cfgPath := filepath.Join(envValue(c.env, "HOME"), ".openclaw", "openclaw.json")
	raw, err := os.ReadFile(cfgPath)
	require.NoError(t, err, "OpenClaw's config file")
	var cfg struct {
		MCPServers json.RawMessage `json:"mcpServers"`
		MCP        struct {
			Servers map[string]struct {
				Command string            `json:"command"`
				Env     map[string]string `json:"env"`
			} `json:"servers"`
		} `json:"mcp"`
	}
	require.NoError(t, json.Unmarshal(raw, &cfg), "OpenClaw writes plain JSON")
	assert.Nil(t, cfg.MCPServers, "nothing under the root mcpServers key")
	saved, ok := cfg.MCP.Servers[serverName]
	require.True(t, ok, "mcp.servers.%s in %s", serverName, cfgPath)
	assert.Equal(t, bin, saved.Command)
	assert.Equal(t, "${VC_AGENT_TOKEN}", saved.Env["VC_AGENT_TOKEN"], "the token is stored as a reference, not a literal")
	assert.Equal(t, vaultURL, saved.Env["VC_BASE_URL"])
	c.must(ctx, t, "mcp", "list")
}

// agentOutput is the part of `openclaw agent --json` the test reads.
type agentOutput struct {
	Payloads []struct {
		Text string `json:"text"`
	} `json:"payloads"`
	Meta struct {
		Aborted   bool `json:"aborted"`
		AgentMeta struct {
			Provider        string `json:"provider"`
			Model           string `json:"model"`
			TerminalReceipt struct {
				SuccessfulToolNames []string `json:"successfulToolNames"`
			} `json:"terminalReceipt"`
		} `json:"agentMeta"`
	} `json:"meta"`
}

func parseAgentOutput(t *testing.T, stdout []byte) agentOutput {
	t.Helper()
	var out agentOutput
	require.NoError(t, json.Unmarshal(stdout, &out), "--json keeps stdout to one JSON document:\n%s", tail(stdout, 2000))
	return out
}

// checkModelSaw asserts the conversation the fake model was sent: three
// requests (ask status, ask search, answer), each offering both tools, and
// tool results that are accords-mcp envelopes. The agent token must never
// appear in anything sent to the model. It returns the requests.
func checkModelSaw(t *testing.T, model *fakeModel, token string) []recordedRequest {
	t.Helper()
	reqs, problems := model.snapshot()
	require.Empty(t, problems, "fake model")
	require.Equal(t, 3, len(reqs), "the model is asked three times: before each tool call and for the answer")
	for i, r := range reqs {
		assert.Equal(t, modelID, r.req.Model, "request %d", i+1)
		assert.False(t, bytes.Contains(r.body, []byte(token)), "request %d carries the agent token", i+1)
	}
	last := reqs[len(reqs)-1]

	status, err := decodeEnvelope(last.results[statusTool])
	require.NoError(t, err, statusTool+" result")
	require.True(t, status.OK, "%s envelope: %s", statusTool, last.results[statusTool])
	var st struct {
		Configured bool   `json:"configured"`
		Source     string `json:"source"`
		BaseURL    string `json:"base_url"`
		Token      string `json:"token"`
	}
	require.NoError(t, json.Unmarshal(status.Data, &st))
	assert.True(t, st.Configured, "VC_AGENT_TOKEN reached the server")
	assert.Equal(t, "env", st.Source)
	assert.Equal(t, vaultURL, st.BaseURL)
	assert.Contains(t, st.Token, "***", "the token is shown masked")
	assert.NotEqual(t, token, st.Token)

	search, err := decodeEnvelope(last.results[searchTool])
	require.NoError(t, err, searchTool+" result")
	require.True(t, search.OK, "%s envelope: %s", searchTool, last.results[searchTool])
	var hits struct {
		Items []struct {
			EntryID string `json:"entry_id"`
			Title   string `json:"title"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal(search.Data, &hits))
	require.NotEmpty(t, hits.Items, "the built-in cookbooks answer %q", searchQuery)
	ids := make([]string, 0, len(hits.Items))
	for _, h := range hits.Items {
		ids = append(ids, h.EntryID)
	}
	assert.True(t, slices.ContainsFunc(ids, func(id string) bool { return strings.Contains(id, "send_email") }),
		"a send-email recipe among the hits: %v", ids)
	t.Logf("model received: %s ok (configured, source %s, token %s); %s ok with %d hits, first %q",
		statusTool, st.Source, st.Token, searchTool, len(hits.Items), hits.Items[0].Title)
	return reqs
}

// checkAgentOutput asserts what OpenClaw itself reports: both tools in
// successfulToolNames, the fake provider's model, and the model's answer.
func checkAgentOutput(t *testing.T, out agentOutput, reqs []recordedRequest) {
	t.Helper()
	names := out.Meta.AgentMeta.TerminalReceipt.SuccessfulToolNames
	t.Logf("successfulToolNames: %v", names)
	first := reqs[0]
	assert.Contains(t, names, first.offered[statusTool])
	assert.Contains(t, names, first.offered[searchTool])
	assert.Equal(t, serverName+"__"+statusTool, first.offered[statusTool], "OpenClaw names MCP tools <server>__<tool>")
	assert.False(t, out.Meta.Aborted)
	assert.Equal(t, provider, out.Meta.AgentMeta.Provider)
	assert.Equal(t, modelID, out.Meta.AgentMeta.Model)
	require.NotEmpty(t, out.Payloads)
	answer := out.Payloads[len(out.Payloads)-1].Text
	assert.Contains(t, answer, "best recipe for \""+searchQuery+"\": ")
	assert.NotContains(t, answer, "(no hits)")
	assert.NotContains(t, answer, "(unreadable search result)")
	t.Logf("agent answer: %s", answer)
}

// checkAudit reads accords-mcp's own receipts on the default database:
// OpenClaw's two calls are there, and the chain verifies. Run alone, they
// are the only receipts, in order; with the second client every call of
// both clients is there exactly once.
func checkAudit(t *testing.T, bin string, env []string, peerCalls []peerCall) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	verify := exec.CommandContext(ctx, bin, "audit", "verify")
	verify.Env = env
	out, err := verify.CombinedOutput()
	require.NoError(t, err, "accords-mcp audit verify: %s", out)

	tailCmd := exec.CommandContext(ctx, bin, "audit", "tail", "-n", "100000", "--json")
	tailCmd.Env = env
	out, err = tailCmd.Output()
	require.NoError(t, err, "accords-mcp audit tail")
	var tools []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r struct {
			Tool    string `json:"tool"`
			Outcome string `json:"outcome"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), "receipt line %s", sc.Bytes())
		require.Equal(t, "ok", r.Outcome, "receipt of %s", r.Tool)
		tools = append(tools, r.Tool)
	}
	require.NoError(t, sc.Err())
	want := map[string]int{statusTool: 1, searchTool: 1} // OpenClaw's
	for _, c := range peerCalls {
		want[c.tool]++
	}
	got := map[string]int{}
	for _, tool := range tools {
		got[tool]++
	}
	assert.Equal(t, want, got, "one receipt per call of either client")
}

// tempHome is the HOME of OpenClaw and of every accords-mcp launch. It is
// removed at the end without failing the test: a shared daemon that an
// accords-mcp launch started may still be writing beside its database.
func tempHome(t *testing.T) string {
	t.Helper()
	home, err := os.MkdirTemp("", "accords-openclaw-home-")
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := os.RemoveAll(home); err != nil {
			t.Logf("remove %s: %v", home, err)
		}
	})
	require.NoError(t, os.MkdirAll(filepath.Join(home, "tmp"), 0o700))
	return home
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// TestMain removes the built command after the tests.
func TestMain(m *testing.M) { testbin.Main(m) }
