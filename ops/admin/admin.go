// Package admin is what the operator commands do to a database, behind one
// interface: Services runs an operation on open services (the command or
// the daemon), Client asks a running daemon over its control socket
// (Handler is the daemon's end). Both return the same typed values and
// errors, so the output is the same either way.
package admin

import (
	"context"
	"encoding/json"
	"io"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/ops/backup"
	"github.com/accordsai/accords-mcp/ops/doctor"
)

// Catalog is the cookbook catalog as the search, catalog, render and
// reindex commands use it.
type Catalog interface {
	Search(ctx context.Context, q index.Query) (index.Result, error)
	ListCookbooks(ctx context.Context, f catalog.ListFilter) (CookbookList, error)
	// ImportBundle validates and stores one bundle file's bytes.
	ImportBundle(ctx context.Context, raw []byte, policy string) (*catalog.UpsertResult, error)
	// ExportBundle returns a stored bundle exactly as stored.
	ExportBundle(ctx context.Context, id, version string) (Export, error)
	DeleteCookbook(ctx context.Context, id, version string) (*catalog.DeleteResult, error)
	Render(ctx context.Context, r catalog.RenderRequest) (*catalog.RenderResult, error)
	// Reindex rebuilds the search index, reporting progress as it goes.
	Reindex(ctx context.Context, progress func(done, total int)) (ReindexResult, error)
}

// Audit is the signed receipt log as the audit command uses it.
type Audit interface {
	AuditVerify(ctx context.Context, r AuditVerifyRequest) (AuditVerifyResult, error)
	// AuditTail returns the newest n receipts, newest first.
	AuditTail(ctx context.Context, n int) ([]audit.Receipt, error)
	// AuditCheckpoint is the newest signed checkpoint (a signed note).
	AuditCheckpoint(ctx context.Context) ([]byte, error)
	// AuditFind is the receipt of the call with that call id.
	AuditFind(ctx context.Context, callID string) (audit.Receipt, error)
	// AuditProve is receipt seq with its inclusion proof.
	AuditProve(ctx context.Context, seq uint64) (audit.Proof, error)
	// AuditExport writes the NDJSON export into w and counts the receipts.
	AuditExport(ctx context.Context, w io.Writer) (int, error)
	// AuditAcknowledge records an operator's acceptance of a log that
	// failed verification, and says what it recorded.
	AuditAcknowledge(ctx context.Context, operator, note string) (string, error)
}

// AuditVerifyRequest names the verifier public key ("" for the log's own
// key where known) and saved checkpoints the log must be consistent with.
type AuditVerifyRequest struct {
	Key   string   `json:"key,omitempty"`
	Saved [][]byte `json:"saved,omitempty"`
}

// AuditVerifyResult is the report and the key it was checked with.
type AuditVerifyResult struct {
	Report audit.Report `json:"report"`
	Key    string       `json:"key"`
}

// Sessions are the stored Vaultclaw sessions; every request carries the
// command's own environment session, which a scope without a stored one
// falls back to.
type Sessions interface {
	SessionStatus(ctx context.Context, r SessionRequest) (session.Status, error)
	SessionConfigure(ctx context.Context, r SessionRequest) (session.Status, error)
	SessionClear(ctx context.Context, r SessionRequest) error
}

// Maintenance is doctor, backup and restore.
type Maintenance interface {
	// Doctor runs the database checks (the file checks run in the command).
	Doctor(ctx context.Context, scope string, env session.Defaults) ([]doctor.Result, error)
	// Backup writes a consistent snapshot into w and returns its size.
	Backup(ctx context.Context, w io.Writer) (int64, error)
	// Restore verifies the backup read from src ("-": r) and swaps it in.
	Restore(ctx context.Context, src string, r io.Reader) (RestoreResult, error)
}

// Backend is every operation.
type Backend interface {
	Catalog
	Audit
	Sessions
	Maintenance
}

// CookbookList is the catalog list result.
type CookbookList struct {
	Items   []catalog.Item `json:"items"`
	RootDir string         `json:"root_dir"`
}

// Export is one stored bundle: its id and version and the stored JSON.
type Export struct {
	CookbookID string          `json:"cookbook_id"`
	Version    string          `json:"version"`
	Raw        json.RawMessage `json:"raw"`
}

// ReindexResult is what a rebuild did.
type ReindexResult struct {
	Entries int    `json:"entries"`
	Rev     uint64 `json:"rev"`
}

// SessionRequest names a scope and, for configure, the session to store.
type SessionRequest struct {
	Scope string           `json:"scope"`
	Env   session.Defaults `json:"env"`
	// Configure only. The token is the secret: it travels only over the
	// 0600 control socket and is never logged or echoed.
	BaseURL   string `json:"base_url,omitempty"`
	Token     string `json:"token,omitempty"`
	TimeoutMS int    `json:"timeout_ms,omitempty"`
}

// RestoreResult is what a restore did, with the warnings about stored
// sessions the configured key cannot open.
type RestoreResult struct {
	backup.Result
	DBPath   string   `json:"db_path"`
	Warnings []string `json:"warnings,omitempty"`
	// Daemon is true when a running daemon did the swap (its clients were
	// held for the moment of the swap); the index is then rebuilt already.
	Daemon bool `json:"daemon,omitempty"`
}

// MaxImportBytes bounds one bundle file.
const MaxImportBytes = 16 << 20
