package app

import (
	"context"
	"errors"
	"io"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/ops/admin"
	"github.com/accordsai/accords-mcp/ops/doctor"
	"github.com/accordsai/accords-mcp/platform/gate"
)

// Backend is the operator commands run inside this process, as the
// control socket serves them: each one passes the gate (a restore holds
// them like tool calls), and restore swaps the file in place.
func (a *App) Backend() admin.Backend {
	svc := &admin.Services{DB: a.DB, Sessions: a.Sessions, DoctorFunc: a.Doctor, RestoreFunc: a.Restore,
		Log: a.audit.current}
	if a.AuditKey != nil {
		svc.AuditKey = a.AuditKey.VerifierKey
	}
	if a.Catalog != nil {
		svc.Catalog = a.Catalog
	}
	return &gatedBackend{g: a.Gate, b: svc}
}

// Doctor runs the database checks in this process. env is the asking
// command's environment session; when it names no token, the process's
// own applies (an HTTP daemon's VC_AGENT_TOKEN from its unit file).
func (a *App) Doctor(ctx context.Context, scope string, env session.Defaults) []doctor.Result {
	if env.Token != "" {
		ctx = session.WithDefaults(ctx, env)
	}
	in := doctor.Inputs{DB: a.DB, Sessions: a.Sessions, Scope: scope, AuditKey: a.AuditKey}
	if a.Vault != nil {
		in.Probe = doctor.VaultProbe(a.Vault)
	}
	if a.Catalog != nil {
		in.Index = func(context.Context) doctor.IndexState {
			docs, irev, srev, err := a.Catalog.SettledIndexStats()
			if errors.Is(err, catalog.ErrIndexRebuilding) {
				return doctor.IndexState{StoreRev: srev, Rebuilding: true}
			}
			return doctor.IndexState{Documents: int(docs), IndexRev: irev, StoreRev: srev, Err: err}
		}
	}
	return doctor.Database(ctx, in)
}

// gatedBackend passes every operation but restore through the gate.
type gatedBackend struct {
	g *gate.Gate
	b admin.Backend
}

func gated[T any](ctx context.Context, g *gate.Gate, fn func() (T, error)) (T, error) {
	leave, err := g.Enter(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	defer leave()
	return fn()
}

func (g *gatedBackend) Search(ctx context.Context, q index.Query) (index.Result, error) {
	return gated(ctx, g.g, func() (index.Result, error) { return g.b.Search(ctx, q) })
}

func (g *gatedBackend) ListCookbooks(ctx context.Context, f catalog.ListFilter) (admin.CookbookList, error) {
	return gated(ctx, g.g, func() (admin.CookbookList, error) { return g.b.ListCookbooks(ctx, f) })
}

func (g *gatedBackend) ImportBundle(ctx context.Context, raw []byte, policy string) (*catalog.UpsertResult, error) {
	return gated(ctx, g.g, func() (*catalog.UpsertResult, error) { return g.b.ImportBundle(ctx, raw, policy) })
}

func (g *gatedBackend) ExportBundle(ctx context.Context, id, version string) (admin.Export, error) {
	return gated(ctx, g.g, func() (admin.Export, error) { return g.b.ExportBundle(ctx, id, version) })
}

func (g *gatedBackend) DeleteCookbook(ctx context.Context, id, version string) (*catalog.DeleteResult, error) {
	return gated(ctx, g.g, func() (*catalog.DeleteResult, error) { return g.b.DeleteCookbook(ctx, id, version) })
}

func (g *gatedBackend) Render(ctx context.Context, r catalog.RenderRequest) (*catalog.RenderResult, error) {
	return gated(ctx, g.g, func() (*catalog.RenderResult, error) { return g.b.Render(ctx, r) })
}

func (g *gatedBackend) Reindex(ctx context.Context, progress func(done, total int)) (admin.ReindexResult, error) {
	return gated(ctx, g.g, func() (admin.ReindexResult, error) { return g.b.Reindex(ctx, progress) })
}

func (g *gatedBackend) AuditVerify(ctx context.Context, r admin.AuditVerifyRequest) (admin.AuditVerifyResult, error) {
	return gated(ctx, g.g, func() (admin.AuditVerifyResult, error) { return g.b.AuditVerify(ctx, r) })
}

func (g *gatedBackend) AuditCheckpoint(ctx context.Context) ([]byte, error) {
	return gated(ctx, g.g, func() ([]byte, error) { return g.b.AuditCheckpoint(ctx) })
}

func (g *gatedBackend) AuditFind(ctx context.Context, callID string) (audit.Receipt, error) {
	return gated(ctx, g.g, func() (audit.Receipt, error) { return g.b.AuditFind(ctx, callID) })
}

func (g *gatedBackend) AuditProve(ctx context.Context, seq uint64) (audit.Proof, error) {
	return gated(ctx, g.g, func() (audit.Proof, error) { return g.b.AuditProve(ctx, seq) })
}

func (g *gatedBackend) AuditExport(ctx context.Context, w io.Writer) (int, error) {
	return gated(ctx, g.g, func() (int, error) { return g.b.AuditExport(ctx, w) })
}

func (g *gatedBackend) AuditAcknowledge(ctx context.Context, operator, note string) (string, error) {
	return gated(ctx, g.g, func() (string, error) { return g.b.AuditAcknowledge(ctx, operator, note) })
}

func (g *gatedBackend) AuditTail(ctx context.Context, n int) ([]audit.Receipt, error) {
	return gated(ctx, g.g, func() ([]audit.Receipt, error) { return g.b.AuditTail(ctx, n) })
}

func (g *gatedBackend) SessionStatus(ctx context.Context, r admin.SessionRequest) (session.Status, error) {
	return gated(ctx, g.g, func() (session.Status, error) { return g.b.SessionStatus(ctx, r) })
}

func (g *gatedBackend) SessionConfigure(ctx context.Context, r admin.SessionRequest) (session.Status, error) {
	return gated(ctx, g.g, func() (session.Status, error) { return g.b.SessionConfigure(ctx, r) })
}

func (g *gatedBackend) SessionClear(ctx context.Context, r admin.SessionRequest) error {
	_, err := gated(ctx, g.g, func() (struct{}, error) { return struct{}{}, g.b.SessionClear(ctx, r) })
	return err
}

func (g *gatedBackend) Doctor(ctx context.Context, scope string, env session.Defaults) ([]doctor.Result, error) {
	return gated(ctx, g.g, func() ([]doctor.Result, error) { return g.b.Doctor(ctx, scope, env) })
}

func (g *gatedBackend) Backup(ctx context.Context, w io.Writer) (int64, error) {
	return gated(ctx, g.g, func() (int64, error) { return g.b.Backup(ctx, w) })
}

// Restore pauses the gate itself.
func (g *gatedBackend) Restore(ctx context.Context, src string, r io.Reader) (admin.RestoreResult, error) {
	return g.b.Restore(ctx, src, r)
}
