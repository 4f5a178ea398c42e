package apperr

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
)

// A full disk or an exhausted quota, however deeply wrapped, is the
// retryable MCP_STORE_UNAVAILABLE (reason no_space) on both mapping paths:
// Internal, and As of an error that is not an *Error.
func TestFullDiskIsRetryable(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT} {
		cause := fmt.Errorf("commit: %w", &os.PathError{Op: "write", Path: "/x/accords.db", Err: errno})
		for name, e := range map[string]*Error{"Internal": Internal("upsert cookbook", cause), "As": As(cause)} {
			if e.Code != CodeStoreUnavailable || !e.Retryable || e.Category != CatInternal || e.Details["reason"] != ReasonNoSpace {
				t.Errorf("%s(%v) = %s retryable=%v category=%s details=%v; want retryable %s, reason %s",
					name, errno, e.Code, e.Retryable, e.Category, e.Details, CodeStoreUnavailable, ReasonNoSpace)
			}
			if !errors.Is(e, errno) {
				t.Errorf("%s(%v) lost its cause", name, errno)
			}
		}
	}
	// Any other failure stays MCP_INTERNAL.
	if e := Internal("upsert cookbook", &os.PathError{Op: "write", Path: "/x", Err: syscall.EIO}); e.Code != CodeInternal || e.Retryable {
		t.Errorf("EIO = %s retryable=%v; want MCP_INTERNAL, not retryable", e.Code, e.Retryable)
	}
}
