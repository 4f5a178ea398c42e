//go:build agents

package openclaw

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/syncbuf"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// requireSharedDaemon fails unless the binary lets several stdio launches
// use one database: `status` answers 0 (a daemon owns it) or 3 (none yet;
// the first launch starts one). Anything else means a second launch would
// fail on the database lock, which is the regression this test guards.
func requireSharedDaemon(t *testing.T, bin string, env []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "status")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	code := exitCode(err)
	t.Logf("accords-mcp status (before the run): exit %d\n%s", code, strings.TrimSpace(string(out)))
	require.Contains(t, []int{0, 3}, code, "accords-mcp status must report the shared daemon: %s", out)
}

// stopDaemon stops the daemon the launches started, so nothing outlives the
// test beside its temporary HOME.
func stopDaemon(t *testing.T, bin string, env []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "stop")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("accords-mcp stop: %v\n%s", err, out)
	}
}

// peer is the second MCP client: the go-sdk over stdio, launching the same
// binary on the same database, calling tools in a loop while OpenClaw runs.
type peer struct {
	cs     *mcp.ClientSession
	stderr *syncbuf.Buffer
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	calls []peerCall
}

type peerCall struct {
	tool     string
	at, end  time.Time
	ok       bool
	problem  string
	hitCount int
}

// startPeer connects and proves one call goes through before OpenClaw
// starts, so OpenClaw's launch is the one that finds the database in use.
func startPeer(t *testing.T, bin string, env []string) *peer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.Command(bin)
	cmd.Env = env
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "accords-agents-peer", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("second stdio client: connect: %v\nstderr: %s", err, stderrTail(stderr))
	}
	p := &peer{cs: cs, stderr: stderr, done: make(chan struct{})}
	t.Cleanup(func() { _ = cs.Close() })
	if c := p.call(ctx, statusTool, map[string]any{}); !c.ok {
		t.Fatalf("second stdio client: first %s failed: %s\nstderr: %s", statusTool, c.problem, stderrTail(stderr))
	}
	return p
}

// run calls a tool every 100 ms, alternating status and search, until stop.
func (p *peer) run() {
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() {
		defer close(p.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			callCtx, cancelCall := context.WithTimeout(context.Background(), 30*time.Second)
			if i%2 == 0 {
				p.call(callCtx, searchTool, map[string]any{"query": searchQuery})
			} else {
				p.call(callCtx, statusTool, map[string]any{})
			}
			cancelCall()
		}
	}()
}

func (p *peer) stop() []peerCall {
	p.cancel()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]peerCall(nil), p.calls...)
}

// call makes one call and records whether the envelope was a success.
func (p *peer) call(ctx context.Context, tool string, args map[string]any) peerCall {
	c := peerCall{tool: tool, at: time.Now()}
	env, err := mcptest.TryCall(ctx, p.cs, tool, args)
	c.end = time.Now()
	switch {
	case err != nil:
		c.problem = err.Error()
	case !env.OK:
		c.problem = fmt.Sprintf("envelope not ok: %v", env.Raw["error"])
	default:
		c.ok = true
		if items, ok := env.Object()["items"].([]any); ok {
			c.hitCount = len(items)
		}
		if tool == searchTool && c.hitCount == 0 {
			c.ok, c.problem = false, "search returned no hits"
		}
	}
	p.mu.Lock()
	p.calls = append(p.calls, c)
	p.mu.Unlock()
	return c
}

// summarize checks the peer's calls: every one succeeded, and some ran
// while OpenClaw's agent was running. It returns the number of calls.
func summarize(calls []peerCall, runStart, runEnd time.Time) (int, error) {
	var problems []string
	during := 0
	for _, c := range calls {
		if !c.ok {
			problems = append(problems, fmt.Sprintf("%s at %s: %s", c.tool, c.at.Format(time.StampMilli), c.problem))
		}
		if c.end.After(runStart) && c.at.Before(runEnd) {
			during++
		}
	}
	if len(problems) > 0 {
		return len(calls), errors.New(strings.Join(problems, "\n"))
	}
	if during == 0 {
		return len(calls), fmt.Errorf("none of the second client's %d calls overlapped the OpenClaw run", len(calls))
	}
	return len(calls), nil
}

// stderrTail is the end of a child's stderr, for failure messages.
func stderrTail(b *syncbuf.Buffer) string { return string(tail([]byte(b.String()), 3000)) }
