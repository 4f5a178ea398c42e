package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/accordsai/accords-mcp/vault/vaultsim"
)

func init() {
	register("dev-vault", "run a local Vaultclaw simulator; dev-vault approve|deny|pending talk to it", runDevVault)
}

const devVaultDefaultAddr = "127.0.0.1:8787"

func runDevVault(ctx context.Context, env *environment, args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "approve", "deny", "pending":
			return runDevVaultAdmin(ctx, env, args[0], args[1:])
		}
	}
	fs := flag.NewFlagSet("dev-vault", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	addr := fs.String("addr", devVaultDefaultAddr, "TCP address to listen on")
	socket := fs.String("socket", "", "listen on this Unix socket instead of TCP")
	token := fs.String("token", "", "agent token to accept (default: a random vc_tok_dev_... token)")
	adminToken := fs.String("admin-token", "", "require this token (header "+vaultsim.AdminTokenHeader+") on the /_sim/ admin endpoints")
	ttl := fs.Duration("approval-ttl", 15*time.Minute, "how long a pending approval waits before it expires")
	noApprovals := fs.Bool("no-approvals", false, "start without approval rules (by default Gmail send and drafts.send need approval)")
	pendingID := fs.Bool("include-pending-id", false, "put pending_id into job.pending_approval (by default clients resolve it via the pending list)")
	noSeed := fs.Bool("no-seed", false, "start without the sample passport document and demo secret")
	quiet := fs.Bool("quiet", false, "do not log each Vault API call")
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "usage: accords-mcp dev-vault [flags]\n       accords-mcp dev-vault approve|deny PENDING_ID [--addr ADDR | --socket PATH] [--admin-token T]\n       accords-mcp dev-vault pending [--addr ADDR | --socket PATH] [--admin-token T]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(env.stderr, "dev-vault: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	var outMu sync.Mutex
	printf := func(format string, a ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(env.stdout, format, a...)
	}
	opts := vaultsim.Options{AgentToken: *token, AdminToken: *adminToken, ApprovalTTL: *ttl, IncludePendingIDInJob: *pendingID, NoSeed: *noSeed,
		OnPending: func(p vaultsim.PendingApproval) {
			printf("approval needed: %s (%s %s, job %s) — accords-mcp dev-vault approve %s%s\n", p.PendingID, p.Kind, p.Verb, p.JobID, p.PendingID, targetFlags(*addr, *socket))
		}}
	if !*quiet {
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
	if *socket != "" {
		srv, err = vaultsim.StartUnix(*socket, opts)
	} else {
		srv, err = vaultsim.Start(*addr, opts)
	}
	if err != nil {
		fmt.Fprintln(env.stderr, "dev-vault:", err)
		return 1
	}
	if *adminToken == "" && *socket == "" && !loopback(srv.Addr()) {
		fmt.Fprintln(env.stderr, "dev-vault: warning: listening beyond loopback without --admin-token; anyone who can reach it can approve requests and read the request log")
	}
	if *noApprovals {
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
	printf("Approvals: accords-mcp dev-vault pending%s ; accords-mcp dev-vault approve|deny PENDING_ID%s\n", targetFlags(*addr, *socket), targetFlags(*addr, *socket))
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

func runDevVaultAdmin(ctx context.Context, env *environment, action string, args []string) int {
	fs := flag.NewFlagSet("dev-vault "+action, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	addr := fs.String("addr", devVaultDefaultAddr, "address of the running dev-vault")
	socket := fs.String("socket", "", "Unix socket of the running dev-vault")
	adminToken := fs.String("admin-token", "", "admin token, when dev-vault was started with one")
	// Accept the pending id before or after the flags.
	var id string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if id == "" && fs.NArg() > 0 {
		id = fs.Arg(0)
	}
	if action != "pending" && strings.TrimSpace(id) == "" {
		fmt.Fprintf(env.stderr, "usage: accords-mcp dev-vault %s PENDING_ID [--addr ADDR | --socket PATH]\n", action)
		return 2
	}
	client := &http.Client{Timeout: 30 * time.Second}
	base := "http://" + *addr
	if *socket != "" {
		sock := *socket
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
	if *adminToken != "" {
		req.Header.Set(vaultsim.AdminTokenHeader, *adminToken)
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
		_ = json.Unmarshal(raw, &list)
		n := 0
		for _, p := range list.Items {
			if p.State != vaultsim.StateWaiting {
				continue
			}
			n++
			fmt.Fprintf(env.stdout, "%s  %-8s %-28s job %s  expires %s\n", p.PendingID, p.Kind, p.Verb, p.JobID, p.ExpiresAt.Local().Format(time.Kitchen))
		}
		if n == 0 {
			fmt.Fprintln(env.stdout, "no approvals waiting")
		}
		return 0
	}
	var p vaultsim.PendingApproval
	_ = json.Unmarshal(raw, &p)
	fmt.Fprintf(env.stdout, "%s: %s is now %s\n", action, p.PendingID, p.State)
	return 0
}
