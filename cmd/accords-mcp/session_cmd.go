package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/gateway/caller"
	"github.com/accordsai/accords-mcp/ops/admin"
)

func init() {
	register("session", "a scope's Vaultclaw session: session status | configure (token on stdin) | clear [--scope TENANT] [--json]", runSession)
}

const sessionUsage = `usage: accords-mcp session <subcommand> [flags]

subcommands:
  status [--scope TENANT] [--json]                        show the session (token masked)
  configure [--base-url URL] [--timeout-ms N] [--scope TENANT] [--json] < token-file
                                                         store a session; the token is read from stdin
  clear [--scope TENANT] [--json]                         forget it; it stays cleared (even with
                                                         VC_AGENT_TOKEN set) until the next configure
`

func runSession(ctx context.Context, env *environment, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(env.stderr, sessionUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	sub := args[0]
	if sub != "status" && sub != "configure" && sub != "clear" {
		fmt.Fprintf(env.stderr, "accords-mcp: unknown session subcommand %q\n\n%s", sub, sessionUsage)
		return 2
	}
	fs := newFlagSet(env, "session "+sub, "session "+sub+" [flags]")
	scope := fs.String("scope", caller.DefaultScope, "tenant scope of the session")
	asJSON := fs.Bool("json", false, "print the result envelope as JSON")
	var baseURL *string
	var timeout *int
	if sub == "configure" {
		baseURL = fs.String("base-url", "", "Vaultclaw base URL: http, https, unix:///path.sock or http+unix (default http://127.0.0.1:8080)")
		timeout = fs.Int("timeout-ms", 0, "request timeout in milliseconds (default 20000)")
	}
	pos, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return 2
	}
	if len(pos) > 0 {
		fmt.Fprintf(env.stderr, "accords-mcp: session %s takes no arguments (the token is read from stdin, never the command line)\n", sub)
		return 2
	}
	cfg, err := env.config()
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return 1
	}
	req := admin.SessionRequest{Scope: strings.TrimSpace(*scope), Env: commandEnv(cfg)}
	if req.Scope == "" {
		req.Scope = caller.DefaultScope
	}
	if sub == "configure" {
		// Read from stdin, never argv: command lines are visible to other users.
		line, _ := bufio.NewReader(env.stdin).ReadString('\n')
		req.Token, req.BaseURL, req.TimeoutMS = strings.TrimSpace(line), *baseURL, *timeout
	}
	return withAppBackend(ctx, env, func(b admin.Backend, _ where) int {
		return sessionCmd(withContext(ctx), env, b, sub, req, *asJSON)
	})
}

// sessionCmd runs one session subcommand and prints its result: the tool's
// data as the envelope with asJSON, a line otherwise.
func sessionCmd(ctx context.Context, env *environment, s admin.Sessions, sub string, req admin.SessionRequest, asJSON bool) int {
	switch sub {
	case "clear":
		err := s.SessionClear(ctx, req)
		return output(env, asJSON, map[string]any{"cleared": true}, err, func(w io.Writer) {
			fmt.Fprintf(w, "session of scope %s cleared; it stays cleared (even with VC_AGENT_TOKEN set) until the next configure\n", req.Scope)
		})
	case "configure":
		st, err := s.SessionConfigure(ctx, req)
		return output(env, asJSON, st, err, func(w io.Writer) { writeSession(w, req.Scope, st) })
	}
	st, err := s.SessionStatus(ctx, req)
	return output(env, asJSON, st, err, func(w io.Writer) { writeSession(w, req.Scope, st) })
}

func writeSession(w io.Writer, scope string, st session.Status) {
	if !st.Configured {
		fmt.Fprintf(w, "scope %s: no session (configure one, or set VC_AGENT_TOKEN)\n", scope)
		return
	}
	fmt.Fprintf(w, "scope %s: %s session, base URL %s, timeout %d ms, token %s\n", scope, st.Source, st.BaseURL, st.TimeoutMS, st.Token)
}
