package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/ops/admin"
	"github.com/accordsai/accords-mcp/platform/caller"
)

func init() {
	register(func(env *environment) *cobra.Command {
		c := &cobra.Command{
			Use:   "session",
			Short: "a scope's Vaultclaw session: status, configure (token on stdin), clear",
		}
		c.AddCommand(
			sessionSub(env, "status", "show the session of a scope (token masked)", ""),
			sessionSub(env, "configure", "store a session for a scope; the token is read from stdin, never the command line",
				"  accords-mcp session configure --base-url http://127.0.0.1:8787 < token-file"),
			sessionSub(env, "clear", "forget the session of a scope; it stays cleared (even with VC_AGENT_TOKEN set) until the next configure", ""),
		)
		return c
	})
}

func sessionSub(env *environment, sub, short, example string) *cobra.Command {
	var scope, baseURL string
	var timeout int
	var asJSON bool
	c := &cobra.Command{
		Use:     sub,
		Short:   short,
		Example: example,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf(cmd, "takes no arguments (the token is read from stdin, never the command line)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := env.config()
			if err != nil {
				fmt.Fprintln(env.stderr, "accords-mcp:", err)
				return exit(1)
			}
			req := admin.SessionRequest{Scope: strings.TrimSpace(scope), Env: commandEnv(cfg)}
			if req.Scope == "" {
				req.Scope = caller.DefaultScope
			}
			if sub == "configure" {
				// Read from stdin, never argv: command lines are visible to other users.
				line, _ := bufio.NewReader(env.stdin).ReadString('\n')
				req.Token, req.BaseURL, req.TimeoutMS = strings.TrimSpace(line), baseURL, timeout
			}
			return onAppBackend(cmd, env, func(ctx context.Context, b admin.Backend) int { return sessionCmd(ctx, env, b, sub, req, asJSON) })
		},
	}
	f := c.Flags()
	f.StringVar(&scope, "scope", caller.DefaultScope, "tenant scope of the session")
	f.BoolVar(&asJSON, "json", false, "print the result envelope as JSON")
	if sub == "configure" {
		f.StringVar(&baseURL, "base-url", "", "Vaultclaw base URL: http, https, unix:///path.sock or http+unix (default http://127.0.0.1:8080)")
		f.IntVar(&timeout, "timeout-ms", 0, "request timeout in milliseconds (default 20000)")
	}
	return c
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
