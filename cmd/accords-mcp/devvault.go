package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/accordsai/accords-mcp/vault/vaultsim"
)

func init() {
	register(func(env *environment) *cobra.Command {
		var o devVaultOptions
		c := &cobra.Command{
			Use:   "dev-vault",
			Short: "run a local Vaultclaw simulator; dev-vault approve|deny|pending talk to it",
			Long: `Run a local Vaultclaw simulator to try accords-mcp without a real vault: it prints the base URL
and agent token to point accords-mcp at, and each approval it waits for. approve, deny and pending
talk to a running one (the same --addr or --socket).`,
			Example: `  accords-mcp dev-vault --addr 127.0.0.1:8787
  accords-mcp dev-vault pending --json
  accords-mcp dev-vault approve apj_1_0a1b2c`,
			RunE: func(cmd *cobra.Command, _ []string) error { return exit(runDevVault(cmd.Context(), env, o)) },
		}
		pf := c.PersistentFlags()
		pf.StringVar(&o.addr, "addr", devVaultDefaultAddr, "TCP address of the simulator (to listen on, or of the running one)")
		pf.StringVar(&o.socket, "socket", "", "Unix socket of the simulator instead of TCP")
		pf.StringVar(&o.adminToken, "admin-token", "", "token (header "+vaultsim.AdminTokenHeader+") the /_sim/ admin endpoints require")
		f := c.Flags()
		f.StringVar(&o.token, "token", "", "agent token to accept (default: a random vc_tok_dev_... token)")
		f.DurationVar(&o.ttl, "approval-ttl", 15*time.Minute, "how long a pending approval waits before it expires")
		f.BoolVar(&o.noApprovals, "no-approvals", false, "start without approval rules (by default Gmail send and drafts.send need approval)")
		f.BoolVar(&o.pendingID, "include-pending-id", false, "put pending_id into job.pending_approval (by default clients resolve it via the pending list)")
		f.BoolVar(&o.noSeed, "no-seed", false, "start without the sample passport document and demo secret")
		f.BoolVar(&o.quiet, "quiet", false, "do not log each Vault API call")
		for _, action := range []string{"approve", "deny"} {
			c.AddCommand(&cobra.Command{
				Use:   action + " PENDING_ID",
				Short: action + " a pending approval of the running simulator",
				Args:  cobra.ExactArgs(1),
				RunE: func(cmd *cobra.Command, args []string) error {
					if strings.TrimSpace(args[0]) == "" {
						return usageErrorf(cmd, "PENDING_ID is empty")
					}
					return exit(runDevVaultAdmin(cmd.Context(), env, action, args[0], o, false))
				},
			})
		}
		var asJSON bool
		pending := &cobra.Command{
			Use:   "pending",
			Short: "list the approvals the running simulator waits for",
			RunE: func(cmd *cobra.Command, _ []string) error {
				return exit(runDevVaultAdmin(cmd.Context(), env, "pending", "", o, asJSON))
			},
		}
		pending.Flags().BoolVar(&asJSON, "json", false, "print the waiting approvals as JSON ({items: [...]})")
		c.AddCommand(pending)
		return c
	})
}

type devVaultOptions struct {
	addr, socket, adminToken, token       string
	ttl                                   time.Duration
	noApprovals, pendingID, noSeed, quiet bool
}

const devVaultDefaultAddr = "127.0.0.1:8787"

func runDevVault(ctx context.Context, env *environment, o devVaultOptions) int {
	var outMu sync.Mutex
	printf := func(format string, a ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(env.stdout, format, a...)
	}
	opts := vaultsim.Options{AgentToken: o.token, AdminToken: o.adminToken, ApprovalTTL: o.ttl, IncludePendingIDInJob: o.pendingID, NoSeed: o.noSeed,
		OnPending: func(p vaultsim.PendingApproval) {
			printf("approval needed: %s (%s %s, job %s) — accords-mcp dev-vault approve %s%s\n", p.PendingID, p.Kind, p.Verb, p.JobID, p.PendingID, targetFlags(o.addr, o.socket))
		}}
	if !o.quiet {
		// Log API calls (never headers or bodies: they hold the token).
		opts.Middleware = func(inner http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rec := &statusRecorder{ResponseWriter: w, status: 200}
				start := time.Now()
				inner.ServeHTTP(rec, r)
				if !strings.HasPrefix(r.URL.Path, vaultsim.AdminPrefix) {
					printf("%s %s %s -> %d (%d ms)\n", time.Now().Format("15:04:05"), r.Method, r.URL.Path, rec.status, time.Since(start).Milliseconds())
				}
			})
		}
	}
	var srv *vaultsim.Server
	var err error
	if o.socket != "" {
		srv, err = vaultsim.StartUnix(o.socket, opts)
	} else {
		srv, err = vaultsim.Start(o.addr, opts)
	}
	if err != nil {
		fmt.Fprintln(env.stderr, "dev-vault:", err)
		return 1
	}
	if o.adminToken == "" && o.socket == "" && !loopback(srv.Addr()) {
		fmt.Fprintln(env.stderr, "dev-vault: warning: listening beyond loopback without --admin-token; anyone who can reach it can approve requests and read the request log")
	}
	if o.noApprovals {
		srv.SetApprovalRules()
	}
	base := srv.URL
	if srv.Socket != "" {
		base = "unix://" + srv.Socket
	}
	printf("Vaultclaw simulator listening on %s\n", base)
	printf("agent token: %s\n\n", srv.AgentToken())
	printf("Point accords-mcp at it with either\n  export VC_BASE_URL=%s VC_AGENT_TOKEN=%s\n", base, srv.AgentToken())
	printf("or the tool call\n  vaultclaw_session_configure {\"base_url\": %q, \"token\": %q}\n\n", base, srv.AgentToken())
	printf("Approvals: accords-mcp dev-vault pending%s ; accords-mcp dev-vault approve|deny PENDING_ID%s\n", targetFlags(o.addr, o.socket), targetFlags(o.addr, o.socket))
	printf("Admin endpoints: %s%s (requests, faults, approvals, approval-rules, tokens, secrets, documents, mailbox)\n\n", base, vaultsim.AdminPrefix)
	<-ctx.Done()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	printf("dev-vault stopped\n")
	return 0
}

func loopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

func targetFlags(addr, socket string) string {
	switch {
	case socket != "":
		return " --socket " + socket
	case addr != devVaultDefaultAddr:
		return " --addr " + addr
	}
	return ""
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Hijack keeps the simulator's connection-reset fault working.
func (r *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	r.status = 0
	return r.ResponseWriter.(http.Hijacker).Hijack()
}

func runDevVaultAdmin(ctx context.Context, env *environment, action, id string, o devVaultOptions, asJSON bool) int {
	client := &http.Client{Timeout: 30 * time.Second}
	base := "http://" + o.addr
	if o.socket != "" {
		sock := o.socket
		client.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}
		base = "http://localhost"
	}
	method, path := http.MethodPost, vaultsim.AdminPrefix+"approvals/"+url.PathEscape(id)+"/"+action
	if action == "pending" {
		method, path = http.MethodGet, vaultsim.AdminPrefix+"approvals"
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
	if err != nil {
		fmt.Fprintln(env.stderr, "dev-vault:", err)
		return 1
	}
	if o.adminToken != "" {
		req.Header.Set(vaultsim.AdminTokenHeader, o.adminToken)
	}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintf(env.stderr, "dev-vault: cannot reach the simulator at %s: %v\n", base, err)
		return 1
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(raw, &e)
		fmt.Fprintf(env.stderr, "dev-vault %s: %s (%s)\n", action, e.Error.Message, e.Error.Code)
		return 1
	}
	if action == "pending" {
		var list struct {
			Items []vaultsim.PendingApproval `json:"items"`
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			fmt.Fprintf(env.stderr, "dev-vault pending: the simulator's answer is not JSON: %v\n", err)
			return 1
		}
		waiting := []vaultsim.PendingApproval{}
		for _, p := range list.Items {
			if p.State == vaultsim.StateWaiting {
				waiting = append(waiting, p)
			}
		}
		if asJSON {
			return printJSON(env, map[string]any{"items": waiting})
		}
		if len(waiting) == 0 {
			fmt.Fprintln(env.stdout, "no approvals waiting")
			return 0
		}
		tw := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "PENDING_ID\tKIND\tVERB\tJOB\tEXPIRES")
		for _, p := range waiting {
			// A full timestamp with its zone: a bare clock time is ambiguous
			// across midnight and between machines.
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.PendingID, p.Kind, p.Verb, p.JobID, p.ExpiresAt.Local().Format(time.RFC3339))
		}
		_ = tw.Flush()
		return 0
	}
	var p vaultsim.PendingApproval
	_ = json.Unmarshal(raw, &p)
	fmt.Fprintf(env.stdout, "%s: %s is now %s\n", action, p.PendingID, p.State)
	return 0
}
