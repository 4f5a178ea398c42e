//go:build packaging

package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// claudeCodeBlock is the sh block under "## Claude Code" in docs/clients.md.
func claudeCodeBlock(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../../docs/clients.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(raw), "\n## Claude Code\n")
	require.True(t, ok, "docs/clients.md has a Claude Code section")
	_, block, ok := strings.Cut(section, "\n```sh\n")
	require.True(t, ok, "the section has an sh block")
	block, _, ok = strings.Cut(block, "\n```\n")
	require.True(t, ok)
	return block
}

// TestClaudeCodeBlock runs the Claude Code block of docs/clients.md as
// written, with the claude command of ACCORDS_CLAUDE_CODE (.ci/extra
// installs @anthropic-ai/claude-code) and the launcher installed offline:
// `claude mcp add` registers the server and `claude mcp list` starts it
// and reports it connected, with no login.
func TestClaudeCodeBlock(t *testing.T) {
	claude := os.Getenv("ACCORDS_CLAUDE_CODE")
	if claude == "" {
		t.Skip("ACCORDS_CLAUDE_CODE (the claude command) is not set")
	}
	block := claudeCodeBlock(t)
	prefix, env := installLauncher(t)
	env = append(env,
		"PATH="+filepath.Dir(claude)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"VC_AGENT_TOKEN=claude-code-test-token",
		"npm_config_offline=true",
		"DISABLE_AUTOUPDATER=1",
	)
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", block)
	cmd.Dir = prefix
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var accords string
	for l := range strings.SplitSeq(string(out), "\n") {
		if strings.HasPrefix(l, "accords: ") {
			accords = l
		}
	}
	assert.Contains(t, accords, "npx -y accords-mcp", "%s", out)
	assert.Contains(t, accords, "Connected", "%s", out)
	assert.Contains(t, string(out), "accords-http: http://127.0.0.1:8765/v1/mcp", "the HTTP entry is registered")

	stop := exec.Command("npx", "--offline", "accords-mcp", "stop")
	stop.Dir = prefix
	stop.Env = env
	_ = stop.Run()
}
