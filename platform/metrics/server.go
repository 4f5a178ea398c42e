package metrics

import (
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/platform/version"
)

// Series names (documented in docs/operations.md).
const (
	NameToolCalls     = "accords_mcp_tool_calls_total"
	NameToolErrors    = "accords_mcp_tool_errors_total"
	NameToolDuration  = "accords_mcp_tool_call_duration_seconds"
	NameVaultDuration = "accords_mcp_vault_request_duration_seconds"
	NameVaultErrors   = "accords_mcp_vault_request_errors_total"
	NameDBSize        = "accords_mcp_db_size_bytes"
	NameIndexDocs     = "accords_mcp_index_documents"
	NamePendingHandle = "accords_mcp_pending_handles"
	NameBuildInfo     = "accords_mcp_build_info"
	NameStartTime     = "accords_mcp_start_time_seconds"
	NameGoroutines    = "accords_mcp_goroutines"
	NameAuditAnchors  = "accords_mcp_audit_anchor_total"
	NameAuditBroken   = "accords_mcp_audit_integrity_failure"
	NameAuditPruned   = "accords_mcp_audit_pruned_receipts_total"
	// etcd replicas only.
	NameFleetRegistered = "accords_mcp_fleet_registered"
	NameFleetReplicas   = "accords_mcp_fleet_replicas"
	NameStoreReachable  = "accords_mcp_store_reachable"
)

// Tool call outcomes.
const (
	OutcomeOK            = "ok"
	OutcomeError         = "error"
	OutcomeProtocolError = "protocol_error"
)

// UnknownTool labels calls to names the server does not expose, so a client
// cannot grow the label set without bound.
const UnknownTool = "_unknown"

// Server holds the series of one accords-mcp process.
type Server struct {
	Registry      *Registry
	ToolCalls     *CounterVec
	ToolErrors    *CounterVec
	ToolDuration  *HistogramVec
	VaultDuration *HistogramVec
	VaultErrors   *CounterVec
	// AuditAnchors counts checkpoint hand-overs to the anchor by result
	// (ok, failed).
	AuditAnchors *CounterVec
	// AuditPruned counts receipts retention removed, by the bound that
	// removed them (count, age, floor: kept under the tenant floor before).
	AuditPruned *CounterVec
}

// New registers the process-wide series. Gauges that need the database or
// the index are added with Gauge once those are open.
func New() *Server {
	r := NewRegistry().WithRuntime()
	s := &Server{
		Registry:      r,
		ToolCalls:     r.NewCounterVec(NameToolCalls, "MCP tool calls by tool and outcome (ok, error, protocol_error).", "tool", "outcome"),
		ToolErrors:    r.NewCounterVec(NameToolErrors, "MCP tool calls that returned an error envelope, by tool and error code.", "tool", "code"),
		ToolDuration:  r.NewHistogramVec(NameToolDuration, "MCP tool call latency in seconds.", DurationBuckets, "tool"),
		VaultDuration: r.NewHistogramVec(NameVaultDuration, "Vaultclaw HTTP request latency in seconds, by endpoint.", DurationBuckets, "endpoint"),
		VaultErrors:   r.NewCounterVec(NameVaultErrors, "Vaultclaw requests that failed, by endpoint and kind (network or http_<status>).", "endpoint", "kind"),
		AuditAnchors:  r.NewCounterVec(NameAuditAnchors, "Signed audit checkpoints handed to ACCORDS_MCP_AUDIT_ANCHOR, by result (ok, failed).", "result"),
		AuditPruned:   r.NewCounterVec(NameAuditPruned, "Audit receipts removed by retention, by bound (count, age, floor: kept under the tenant floor until then).", "bound"),
	}
	// Both results exist from the start, so "no failure yet" reads 0
	// rather than absent.
	s.AuditAnchors.Add(0, "ok")
	s.AuditAnchors.Add(0, "failed")
	for _, b := range []string{"count", "age", "floor"} {
		s.AuditPruned.Add(0, b)
	}
	bi := r.NewGaugeVec(NameBuildInfo, "Build information; the value is always 1.", "version", "goversion")
	bi.Set(1, version.Version, runtime.Version())
	start := float64(time.Now().UnixNano()) / 1e9
	r.NewGaugeFunc(NameStartTime, "Unix time the process started.", func() (float64, bool) { return start, true })
	r.NewGaugeFunc(NameGoroutines, "Number of goroutines.", func() (float64, bool) { return float64(runtime.NumGoroutine()), true })
	return s
}

// Gauge registers a gauge read at scrape time (db size, index documents,
// pending handles).
func (s *Server) Gauge(name, help string, fn func() (float64, bool)) {
	s.Registry.NewGaugeFunc(name, help, fn)
}

// FileSizeGauge reads a file's size at scrape time.
func FileSizeGauge(path string) func() (float64, bool) {
	return func() (float64, bool) {
		fi, err := os.Stat(path)
		if err != nil {
			return 0, false
		}
		return float64(fi.Size()), true
	}
}

// ObserveVaultRequest records one Vault HTTP request: method, path with ids
// folded into {id}, status (0 on transport failure), latency and error.
func (s *Server) ObserveVaultRequest(method, path string, status int, d time.Duration, err error) {
	ep := VaultEndpoint(method, path)
	s.VaultDuration.Observe(d.Seconds(), ep)
	switch {
	case err != nil || status == 0:
		s.VaultErrors.Inc(ep, "network")
	case status >= 400:
		s.VaultErrors.Inc(ep, "http_"+itoa(status))
	}
}

func itoa(n int) string {
	if n < 0 || n > 999 {
		return "other"
	}
	return string([]byte{byte('0' + n/100), byte('0' + n/10%10), byte('0' + n%10)})
}

// vaultWords are the fixed path segments of the Vaultclaw API; any other
// segment is an id and becomes {id} so the endpoint label stays bounded.
var vaultWords = map[string]bool{
	"v0": true, "connectors": true, "validate": true, "execute": true, "execute-job": true, "plans": true,
	"runs": true, "jobs": true, "approvals": true, "pending": true, "docs": true, "types": true,
	"suggest": true, "latest": true, "secrets": true, "slots": true, "bindings": true, "bind": true,
	"unbounded": true, "profiles": true, "list": true, "get": true, "upsert": true,
}

// VaultEndpoint normalises "GET /v0/jobs/j-123?x=1" to "GET /v0/jobs/{id}".
func VaultEndpoint(method, path string) string {
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i, sg := range segs {
		if sg != "" && !vaultWords[sg] {
			segs[i] = "{id}"
		}
	}
	m := strings.ToUpper(strings.TrimSpace(method))
	if m == "" {
		m = "GET"
	}
	return m + " /" + strings.Join(segs, "/")
}

// ObserveToolCall counts one tools/call by tool and outcome and records its
// latency.
func (s *Server) ObserveToolCall(tool, outcome, code string, d time.Duration) {
	s.ToolCalls.Inc(tool, outcome)
	if code != "" {
		s.ToolErrors.Inc(tool, code)
	}
	s.ToolDuration.Observe(d.Seconds(), tool)
}
