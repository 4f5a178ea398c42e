package remote

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/accordsai/accords-mcp/platform/apperr"
)

// Integrity sources: which published digests the download was checked
// against.
const (
	IntegrityExpected = "expected_sha256"
	IntegrityIndex    = "index"
	IntegrityBoth     = "expected_sha256+index"
	IntegrityNone     = "none"
)

// Integrity is reported with every install. SHA256 is always the digest of
// the exact downloaded bytes (not the catalog's canonical content hash).
type Integrity struct {
	Verified bool   `json:"verified"`
	SHA256   string `json:"sha256"`
	Source   string `json:"source"`
}

// NormalizeSHA256 trims and lowercases a caller-supplied digest; anything
// but 64 hex characters is a validation error naming field.
func NormalizeSHA256(field, raw string) (string, error) {
	s := strings.ToLower(strings.TrimSpace(raw))
	if s == "" {
		return "", nil
	}
	if !validHexSHA256(s) {
		return "", apperr.Validation(field, "%s must be 64 hexadecimal characters (a SHA-256 digest)", field)
	}
	return s, nil
}

// integrityPlan checks, before any download, that the digests on offer are
// consistent and that the source's policy is met.
func integrityPlan(src Source, it IndexItem, expected string) error {
	if expected != "" && it.SHA256 != "" && expected != it.SHA256 {
		return apperr.New(apperr.CodeRemoteChecksumMismatch, "expected_sha256 does not match the sha256 published in the remote index").
			With("expected_sha256", expected).With("index_sha256", it.SHA256).
			With("source_id", src.SourceID).With("cookbook_id", it.CookbookID).With("version", it.Version)
	}
	if src.RequireSHA256 && expected == "" && it.SHA256 == "" {
		return apperr.Validation("expected_sha256", "source %s requires a SHA-256 digest: pass expected_sha256 or publish sha256 in the remote index", src.SourceID).
			With("source_id", src.SourceID).With("require_sha256", true).
			With("cookbook_id", it.CookbookID).With("version", it.Version)
	}
	return nil
}

// verifyBytes hashes body and checks it against every digest given; both must
// match when both are present.
func verifyBytes(src Source, it IndexItem, expected string, body []byte) (Integrity, error) {
	sum := sha256.Sum256(body)
	actual := hex.EncodeToString(sum[:])
	res := Integrity{SHA256: actual, Source: IntegrityNone}
	check := func(want, against string) error {
		if want == "" || want == actual {
			return nil
		}
		return apperr.New(apperr.CodeRemoteChecksumMismatch, "remote cookbook checksum mismatch").
			With("expected_sha256", want).With("actual_sha256", actual).With("checked_against", against).
			With("source_id", src.SourceID).With("cookbook_id", it.CookbookID).With("version", it.Version)
	}
	if err := check(expected, IntegrityExpected); err != nil {
		return res, err
	}
	if err := check(it.SHA256, IntegrityIndex); err != nil {
		return res, err
	}
	switch {
	case expected != "" && it.SHA256 != "":
		res.Source = IntegrityBoth
	case expected != "":
		res.Source = IntegrityExpected
	case it.SHA256 != "":
		res.Source = IntegrityIndex
	}
	res.Verified = res.Source != IntegrityNone
	return res, nil
}
