package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/store"
)

// Stored is a bundle as stored: decoded, plus its canonical bytes and hash.
type Stored struct {
	Bundle *Bundle
	Raw    json.RawMessage
	Hash   string
}

func notFoundCookbook(id string) *apperr.Error {
	return apperr.New(apperr.CodeCatalogNotFound, "cookbook not found").With("cookbook_id", id)
}

func notFoundVersion(id, version string) *apperr.Error {
	return apperr.New(apperr.CodeCatalogNotFound, "cookbook version not found").With("cookbook_id", id).With("version", version)
}

// resolve finds the stored bytes of id@version ("" = latest) in tx.
func resolve(root store.Bucket, id, version string) (string, []byte, error) {
	if version == "" {
		version = latestVersion(root, id)
		if version == "" {
			return "", nil, notFoundCookbook(id)
		}
	}
	raw := root.Get(bundleKey(id, version))
	if raw == nil {
		if latestVersion(root, id) == "" {
			return "", nil, notFoundCookbook(id)
		}
		return "", nil, notFoundVersion(id, version)
	}
	return version, raw, nil
}

func checkRef(id, version string) (string, string, error) {
	id = strings.TrimSpace(id)
	version = strings.TrimSpace(version)
	if err := CheckCookbookID(id); err != nil {
		return "", "", err
	}
	if version != "" {
		if err := CheckVersion(version); err != nil {
			return "", "", err
		}
	}
	return id, version, nil
}

// Get returns id@version, or the latest version when version is empty.
func (s *Service) Get(ctx context.Context, id, version string) (*Stored, error) {
	var out *Stored
	err := s.readRaw(id, version, func(v string, stored []byte) error {
		raw, err := unpack(stored)
		if err != nil {
			return storedNotJSON(id, v, err)
		}
		b, derr := decodeBundle(raw)
		if derr != nil {
			return storedNotJSON(id, v, derr)
		}
		if !packed(stored) {
			raw = append(json.RawMessage(nil), raw...)
		}
		out = &Stored{Bundle: b, Raw: raw, Hash: HashBytes(raw)}
		return nil
	})
	return out, err
}

// Export returns the canonical JSON of id@version (latest when version is
// empty), checked to decode.
func (s *Service) Export(ctx context.Context, id, version string) (json.RawMessage, error) {
	st, err := s.Get(ctx, id, version)
	if err != nil {
		return nil, err
	}
	return st.Raw, nil
}

// template reads id@version (latest when version is empty) with only entry
// entryID decoded (Entries is empty when there is none).
func (s *Service) template(id, version, entryID string) (*Bundle, error) {
	var out *Bundle
	err := s.readRaw(id, version, func(v string, stored []byte) error {
		raw, err := unpack(stored)
		if err != nil {
			return storedNotJSON(id, v, err)
		}
		cid, ver, e, derr := decodeBundleEntry(raw, entryID)
		if derr != nil {
			return storedNotJSON(id, v, derr)
		}
		b := &Bundle{CookbookID: cid, Version: ver}
		if e != nil {
			b.Entries = []Entry{*e}
		}
		out = b
		return nil
	})
	return out, err
}

// readRaw resolves id@version (latest when version is empty) and hands the
// stored bytes, valid only inside fn, to fn in one read transaction.
func (s *Service) readRaw(id, version string, fn func(v string, raw []byte) error) error {
	id, version, err := checkRef(id, version)
	if err != nil {
		return err
	}
	err = s.db.View(func(tx store.Tx) error {
		root, err := catalogBucket(tx)
		if err != nil {
			return err
		}
		v, raw, err := resolve(root, id, version)
		if err != nil {
			return err
		}
		return fn(v, raw)
	})
	if err != nil {
		return wrapStoreErr("get cookbook", err)
	}
	return nil
}

func storedNotJSON(id, version string, cause error) error {
	return schemaErr("stored bundle is not valid json").With("cookbook_id", id).With("version", version).With("cause", cause.Error())
}

func wrapStoreErr(op string, err error) error {
	if ae, ok := errors.AsType[*apperr.Error](err); ok {
		return ae
	}
	return apperr.Internal(op, err)
}

// EntryResult is a recipe_get answer.
type EntryResult struct {
	CookbookID string          `json:"cookbook_id"`
	Version    string          `json:"version"`
	Entry      json.RawMessage `json:"entry"`
}

// Entry returns one entry of id@version (latest when version is empty).
func (s *Service) Entry(ctx context.Context, id, version, entryID string) (*EntryResult, error) {
	entryID = strings.TrimSpace(entryID)
	b, e, err := s.EntryOf(ctx, id, version, entryID)
	if err != nil {
		return nil, err
	}
	if e == nil {
		return nil, apperr.New(apperr.CodeCatalogNotFound, "entry not found in cookbook").
			With("cookbook_id", b.CookbookID).With("version", b.Version).With("entry_id", clip(entryID))
	}
	raw, err := json.Marshal(e)
	if err != nil {
		return nil, apperr.Internal("encode entry", err)
	}
	return &EntryResult{CookbookID: b.CookbookID, Version: b.Version, Entry: raw}, nil
}

// EntryOf returns entry entryID of id@version, decoded, in a bundle holding
// it alone; the entry is nil when there is none.
func (s *Service) EntryOf(_ context.Context, id, version, entryID string) (*Bundle, *Entry, error) {
	b, err := s.template(id, version, entryID)
	if err != nil {
		return nil, nil, err
	}
	return b, b.Entry(entryID), nil
}
