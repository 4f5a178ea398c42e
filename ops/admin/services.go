package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/ops/backup"
	"github.com/accordsai/accords-mcp/ops/doctor"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/keyring"
	"github.com/accordsai/accords-mcp/store"
)

// Services runs the operations on open services; an operation needing a nil
// field fails with a plain error.
type Services struct {
	DB       *store.DB
	Catalog  *catalog.Service
	Sessions *session.Service
	// Doctor runs the database checks with env as the environment session
	// (the daemon's are the same checks the command runs offline).
	DoctorFunc func(ctx context.Context, scope string, env session.Defaults) []doctor.Result
	// Restore swaps a backup in; nil means the operation is not offered
	// here (the command restores offline through backup.Restore itself).
	RestoreFunc func(ctx context.Context, src string, r io.Reader) (RestoreResult, error)
	// AuditKey is the verifier key when a request names none; Log is the open
	// audit log acknowledgements are recorded in.
	AuditKey string
	Log      func() *audit.Log
}

var _ Backend = (*Services)(nil)

var errNotOpen = errors.New("admin: the service this operation needs is not open")

func (s *Services) catalog() (*catalog.Service, error) {
	if s.Catalog == nil {
		return nil, errNotOpen
	}
	return s.Catalog, nil
}

// Search implements Catalog.
func (s *Services) Search(ctx context.Context, q index.Query) (index.Result, error) {
	c, err := s.catalog()
	if err != nil {
		return index.Result{}, err
	}
	return c.Search(ctx, q)
}

// ListCookbooks implements Catalog.
func (s *Services) ListCookbooks(ctx context.Context, f catalog.ListFilter) (CookbookList, error) {
	c, err := s.catalog()
	if err != nil {
		return CookbookList{}, err
	}
	items, err := c.List(ctx, f)
	return CookbookList{Items: items, RootDir: c.DBPath()}, err
}

// ImportBundle implements Catalog.
func (s *Services) ImportBundle(ctx context.Context, raw []byte, policy string) (*catalog.UpsertResult, error) {
	c, err := s.catalog()
	if err != nil {
		return nil, err
	}
	if len(raw) > MaxImportBytes {
		return nil, apperr.Validation("file", "the bundle is larger than %d bytes", MaxImportBytes)
	}
	b, err := catalog.DecodeBundle(raw)
	if err != nil {
		return nil, err
	}
	return c.Upsert(ctx, b, catalog.UpsertOptions{Policy: policy})
}

// ExportBundle implements Catalog.
func (s *Services) ExportBundle(ctx context.Context, id, version string) (Export, error) {
	c, err := s.catalog()
	if err != nil {
		return Export{}, err
	}
	st, err := c.Get(ctx, id, version)
	if err != nil {
		return Export{}, err
	}
	return Export{CookbookID: st.Bundle.CookbookID, Version: st.Bundle.Version, Raw: st.Raw}, nil
}

// DeleteCookbook implements Catalog.
func (s *Services) DeleteCookbook(ctx context.Context, id, version string) (*catalog.DeleteResult, error) {
	c, err := s.catalog()
	if err != nil {
		return nil, err
	}
	return c.Delete(ctx, id, version)
}

// Render implements Catalog.
func (s *Services) Render(ctx context.Context, r catalog.RenderRequest) (*catalog.RenderResult, error) {
	c, err := s.catalog()
	if err != nil {
		return nil, err
	}
	return c.Render(ctx, r)
}

// Reindex implements Catalog.
func (s *Services) Reindex(ctx context.Context, progress func(done, total int)) (ReindexResult, error) {
	c, err := s.catalog()
	if err != nil {
		return ReindexResult{}, err
	}
	entries := 0
	err = c.Reindex(ctx, func(d, total int) {
		entries = d
		if progress != nil {
			progress(d, total)
		}
	})
	if err != nil {
		return ReindexResult{}, err
	}
	return ReindexResult{Entries: entries, Rev: c.Rev()}, nil
}

func (s *Services) db() (*store.DB, error) {
	if s.DB == nil {
		return nil, errNotOpen
	}
	return s.DB, nil
}

// AuditVerify implements Audit.
func (s *Services) AuditVerify(_ context.Context, r AuditVerifyRequest) (AuditVerifyResult, error) {
	db, err := s.db()
	if err != nil {
		return AuditVerifyResult{}, err
	}
	key := r.Key
	if key == "" {
		key = s.AuditKey
	}
	if key == "" {
		return AuditVerifyResult{}, errors.New("no audit public key to verify with; pass it with --key (accords-mcp audit key prints it)")
	}
	v, err := audit.ParseVerifierKey(key)
	if err != nil {
		return AuditVerifyResult{}, err
	}
	rep, err := audit.Verify(db, audit.VerifyOptions{Verifier: v, Saved: r.Saved})
	return AuditVerifyResult{Report: rep, Key: key}, err
}

// AuditCheckpoint implements Audit.
func (s *Services) AuditCheckpoint(context.Context) ([]byte, error) {
	db, err := s.db()
	if err != nil {
		return nil, err
	}
	return audit.NewestCheckpoint(db)
}

// AuditFind implements Audit. On the open log (the daemon's) it first
// commits what is queued, so a call that just answered is found.
func (s *Services) AuditFind(_ context.Context, callID string) (audit.Receipt, error) {
	db, err := s.db()
	if err != nil {
		return audit.Receipt{}, err
	}
	if s.Log != nil {
		if l := s.Log(); l != nil {
			_ = l.Flush() // a failed flush must not hide what is committed
		}
	}
	return audit.FindCall(db, callID)
}

// AuditProve implements Audit.
func (s *Services) AuditProve(_ context.Context, seq uint64) (audit.Proof, error) {
	db, err := s.db()
	if err != nil {
		return audit.Proof{}, err
	}
	return audit.Prove(db, seq)
}

// AuditExport implements Audit.
func (s *Services) AuditExport(_ context.Context, w io.Writer) (int, error) {
	db, err := s.db()
	if err != nil {
		return 0, err
	}
	return audit.Export(db, w)
}

// AuditAcknowledge implements Audit: on the open log, whose writer must
// be the one that records it.
func (s *Services) AuditAcknowledge(_ context.Context, operator, note string) (string, error) {
	if s.Log == nil {
		return "", errNotOpen
	}
	return Acknowledge(s.Log(), operator, note)
}

// ErrNothingToAcknowledge means the log verifies.
var ErrNothingToAcknowledge = errors.New("the audit log verifies: nothing to acknowledge")

// Acknowledge verifies the whole log with l's key and, when that fails,
// records the operator's acceptance.
func Acknowledge(l *audit.Log, operator, text string) (string, error) {
	rep, err := audit.Verify(l.DB(), audit.VerifyOptions{Verifier: l.Key().Verifier()})
	if err != nil {
		return "", err
	}
	p := rep.Problem
	if p == nil {
		if p, err = l.Integrity(); err != nil {
			return "", err
		}
	}
	if p == nil {
		return "", ErrNothingToAcknowledge
	}
	ref, err := l.Acknowledge(operator, text, p)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("acknowledged: %s at receipt %d (%s); recorded as receipt %d; verification restarts after receipt %d and write tools are allowed again",
		p.Kind, p.Seq, p.Message, ref.Seq, ref.Seq-1), nil
}

// AuditTail implements Audit.
func (s *Services) AuditTail(_ context.Context, n int) ([]audit.Receipt, error) {
	db, err := s.db()
	if err != nil {
		return nil, err
	}
	return audit.List(db, audit.Filter{Limit: n})
}

func (s *Services) sessions() (*session.Service, error) {
	if s.Sessions == nil {
		return nil, errNotOpen
	}
	return s.Sessions, nil
}

// SessionStatus implements Sessions.
func (s *Services) SessionStatus(ctx context.Context, r SessionRequest) (session.Status, error) {
	svc, err := s.sessions()
	if err != nil {
		return session.Status{}, err
	}
	return svc.Status(session.WithDefaults(ctx, r.Env), r.Scope)
}

// SessionConfigure implements Sessions.
func (s *Services) SessionConfigure(ctx context.Context, r SessionRequest) (session.Status, error) {
	svc, err := s.sessions()
	if err != nil {
		return session.Status{}, err
	}
	return svc.Configure(session.WithDefaults(ctx, r.Env), r.Scope, r.BaseURL, r.Token, r.TimeoutMS)
}

// SessionClear implements Sessions.
func (s *Services) SessionClear(ctx context.Context, r SessionRequest) error {
	svc, err := s.sessions()
	if err != nil {
		return err
	}
	return svc.Clear(session.WithDefaults(ctx, r.Env), r.Scope)
}

// Doctor implements Maintenance.
func (s *Services) Doctor(ctx context.Context, scope string, env session.Defaults) ([]doctor.Result, error) {
	if s.DoctorFunc == nil {
		return nil, errNotOpen
	}
	return s.DoctorFunc(ctx, scope, env), nil
}

// Backup implements Maintenance.
func (s *Services) Backup(_ context.Context, w io.Writer) (int64, error) {
	db, err := s.db()
	if err != nil {
		return 0, err
	}
	if a, ok := w.(SizeAnnouncer); ok {
		return backup.SnapshotTo(db, a.Begin, w)
	}
	return backup.Snapshot(db, w)
}

// Restore implements Maintenance.
func (s *Services) Restore(ctx context.Context, src string, r io.Reader) (RestoreResult, error) {
	if s.RestoreFunc == nil {
		return RestoreResult{}, errNotOpen
	}
	return s.RestoreFunc(ctx, src, r)
}

// SessionWarnings reports stored sessions the keys cannot open (the key is
// not part of a backup). keyFile is where the key file would be; secretKey
// the configured key ("" when none).
func SessionWarnings(ctx context.Context, db *store.DB, secretKey, keyFile string) []string {
	var scopes []string
	_ = db.View(func(tx store.Tx) error {
		if b := tx.Bucket(store.BucketSessions); b != nil {
			return b.ForEach(func(k, _ []byte) error {
				scopes = append(scopes, string(k))
				return nil
			})
		}
		return nil
	})
	if len(scopes) == 0 {
		return nil
	}
	if strings.TrimSpace(secretKey) == "" {
		if _, err := os.Stat(keyFile); errors.Is(err, fs.ErrNotExist) {
			return []string{fmt.Sprintf("%d stored session(s) are sealed with a secret key, but %s does not exist: copy the key file from the machine the backup came from, or set ACCORDS_MCP_SECRET_KEY, before starting", len(scopes), keyFile)}
		}
	}
	keys, err := keyring.Load(secretKey, keyFile)
	if err != nil {
		return []string{"cannot load the secret key: " + err.Error()}
	}
	svc := session.New(db, keys, session.Defaults{})
	var bad []string
	for _, sc := range scopes {
		if _, err := svc.Resolve(ctx, sc); err != nil && apperr.As(err).Details["reason"] == "secret_key_mismatch" {
			bad = append(bad, sc)
		}
	}
	if len(bad) > 0 {
		return []string{fmt.Sprintf("the sessions of scope(s) %s were sealed with another secret key (%s): use the original key file or ACCORDS_MCP_SECRET_KEY, or configure those sessions again", strings.Join(bad, ", "), keys.Source)}
	}
	return nil
}

// openRegular opens a backup file to stream, refusing anything that is not
// a regular file, with the error an offline restore gives.
func openRegular(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", backup.ErrInvalid, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w: %s is not a regular file", backup.ErrInvalid, path)
	}
	return f, nil
}
