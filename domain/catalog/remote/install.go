package remote

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/store"
)

// Catalog is what an install needs from the local catalog.
type Catalog interface {
	// Stage decodes, canonicalizes and validates raw bundle bytes.
	Stage(raw []byte) (*Staged, error)
	// Commit stores st under policy; hook runs in the same write transaction
	// with the stored content hash, and its failure stores nothing.
	Commit(ctx context.Context, st *Staged, policy string, hook func(tx store.Tx, storedHash string) error) (*Committed, error)
}

// Staged is a validated bundle ready to commit.
type Staged struct {
	CookbookID  string
	Version     string
	ContentHash string
	// Bundle is the catalog's own representation, opaque here.
	Bundle any
}

// Committed is the catalog's answer to a commit.
type Committed struct {
	// Cookbook is the catalog row of the bundle now stored (under
	// SKIP_IF_EXISTS with different content: the existing one).
	Cookbook any
	// Changed is true when the store was written.
	Changed bool
	// Policy is the normalized conflict policy.
	Policy string
	// Outcome is created, updated, unchanged or skipped.
	Outcome string
}

// LockRecord remembers where an installed cookbook version came from.
type LockRecord struct {
	SourceID        string    `json:"source_id"`
	CookbookID      string    `json:"cookbook_id"`
	Version         string    `json:"version"`
	URL             string    `json:"url"`
	SHA256          string    `json:"sha256"`
	ContentHash     string    `json:"content_hash"`
	Verified        bool      `json:"verified"`
	IntegritySource string    `json:"integrity_source"`
	InstalledAt     time.Time `json:"installed_at"`
}

func lockKey(cookbookID, version string) []byte { return []byte(cookbookID + "@" + version) }

// Lock returns the lock record of an installed version, if any.
func (s *Service) Lock(cookbookID, version string) (*LockRecord, error) {
	var rec *LockRecord
	err := s.db.View(func(tx store.Tx) error {
		b := tx.Bucket(store.BucketSources).Bucket(bucketInstallLog)
		if b == nil {
			return nil
		}
		var r LockRecord
		found, err := store.GetJSON(b, lockKey(cookbookID, version), &r)
		if found && err == nil {
			rec = &r
		}
		return err
	})
	if err != nil {
		return nil, apperr.Internal("read install lock", err)
	}
	return rec, nil
}

// InstallRequest are the arguments of an install.
type InstallRequest struct {
	SourceID          string
	CookbookID        string
	Version           string
	ConflictPolicy    string
	ExpectedSHA256    string
	IncludePrerelease bool
	// Progress, when set, hears about each stage (done of total).
	Progress func(done, total int, stage string)
}

const installStages = 4

// InstallResult is reported to the caller.
type InstallResult struct {
	SourceID    string      `json:"source_id"`
	Selected    IndexItem   `json:"selected"`
	ContentHash string      `json:"content_hash"`
	Cookbook    any         `json:"cookbook"`
	Changed     bool        `json:"created_or_updated"`
	Outcome     string      `json:"outcome"`
	Integrity   Integrity   `json:"integrity"`
	Lock        *LockRecord `json:"lock,omitempty"`
	// IndexStale is true when the source's index could not be fetched and
	// the cached copy chose the version.
	IndexStale bool `json:"index_stale"`
	// Policy is the normalized conflict policy.
	Policy string `json:"-"`
}

// Install resolves the version, downloads within the byte cap, verifies the
// SHA-256 digests, validates, then commits bundle and lock record in one
// transaction; nothing is stored on an earlier failure.
func (s *Service) Install(ctx context.Context, r InstallRequest) (*InstallResult, error) {
	r.SourceID, r.CookbookID = strings.TrimSpace(r.SourceID), strings.TrimSpace(r.CookbookID)
	if r.SourceID == "" || r.CookbookID == "" {
		field := "source_id"
		if r.SourceID != "" {
			field = "cookbook_id"
		}
		return nil, apperr.Validation(field, "source_id and cookbook_id are required")
	}
	if !catalog.ValidID(r.CookbookID) {
		return nil, apperr.Validation("cookbook_id", "cookbook_id must match %s", catalog.IDPattern)
	}
	expected, err := NormalizeSHA256("expected_sha256", r.ExpectedSHA256)
	if err != nil {
		return nil, err
	}
	// Argument errors surface before any network traffic.
	policy, err := catalog.NormalizePolicy(r.ConflictPolicy)
	if err != nil {
		return nil, err
	}
	if s.catalog == nil {
		return nil, apperr.Internal("remote install", fmt.Errorf("no catalog configured"))
	}
	src, err := s.Source(r.SourceID)
	if err != nil {
		return nil, err
	}
	progress := func(done int, stage string) {
		if r.Progress != nil {
			r.Progress(done, installStages, stage)
		}
	}
	view, err := s.FetchIndex(ctx, src)
	if err != nil {
		return nil, err
	}
	progress(1, "remote index fetched")
	item, err := SelectItem(view.Index.Items, r.CookbookID, r.Version, r.IncludePrerelease)
	if err != nil {
		// Say so when the index has rejected items for the cookbook.
		if rej := view.Index.Rejected(r.CookbookID); len(rej) > 0 {
			if ae, ok := err.(*apperr.Error); ok {
				ae.Message += fmt.Sprintf("; %d item(s) for it were rejected: %s", len(rej), rej[0].Reason)
				ae.With("rejected_items", rej)
			}
		}
		return nil, withSource(err, src)
	}
	if err := integrityPlan(src, item, expected); err != nil {
		return nil, err
	}
	tok, err := s.token(src)
	if err != nil {
		return nil, err
	}
	du, _ := parseHTTPURL(item.DownloadURL) // validated by ParseIndex
	resp, err := s.get(ctx, fetchRequest{kind: "bundle", url: du, token: tokenFor(src, tok, du), limit: s.opts.MaxBundleBytes})
	if err != nil {
		return nil, withSource(err, src)
	}
	progress(2, "bundle downloaded")
	integ, err := verifyBytes(src, item, expected, resp.body)
	if err != nil {
		return nil, err
	}
	st, err := s.catalog.Stage(resp.body)
	if err != nil {
		if ae, ok := err.(*apperr.Error); ok && ae.Code == apperr.CodeCatalogSchemaInvalid &&
			(ae.Message == "bundle must be valid json object" || ae.Message == "bundle is required") {
			ae.Message = "downloaded cookbook bundle is invalid json"
		}
		return nil, withSource(err, src)
	}
	if st.CookbookID != item.CookbookID || st.Version != item.Version {
		return nil, apperr.New(apperr.CodeCatalogSchemaInvalid, "downloaded bundle id/version does not match index item").
			With("index_cookbook_id", item.CookbookID).With("index_version", item.Version).
			With("bundle_cookbook_id", st.CookbookID).With("bundle_version", st.Version).With("source_id", src.SourceID)
	}
	progress(3, "bundle verified and validated")
	lock := &LockRecord{SourceID: src.SourceID, CookbookID: item.CookbookID, Version: item.Version, URL: du.Redacted(),
		SHA256: integ.SHA256, ContentHash: st.ContentHash, Verified: integ.Verified, IntegritySource: integ.Source,
		InstalledAt: s.now().UTC()}
	wrote := false
	com, err := s.catalog.Commit(ctx, st, policy, func(tx store.Tx, storedHash string) error {
		if storedHash != st.ContentHash {
			// SKIP_IF_EXISTS kept different content: the lock must not
			// claim this download is what is installed.
			return nil
		}
		b, err := nested(tx, bucketInstallLog)
		if err != nil {
			return err
		}
		wrote = true
		return store.PutJSON(b, lockKey(item.CookbookID, item.Version), lock)
	})
	if err != nil {
		return nil, withSource(err, src)
	}
	progress(4, "bundle stored")
	res := &InstallResult{SourceID: src.SourceID, Selected: item, ContentHash: st.ContentHash, Cookbook: com.Cookbook,
		Changed: com.Changed, Outcome: com.Outcome, Integrity: integ, IndexStale: view.Stale, Policy: com.Policy}
	if wrote {
		res.Lock = lock
	}
	return res, nil
}
