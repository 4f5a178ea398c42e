//go:build windows

package apperr

import (
	"errors"

	"golang.org/x/sys/windows"
)

// noSpace reports a full disk or an exceeded quota: each passes once space
// is freed, and none leaves a partial transaction.
func noSpace(err error) bool {
	return errors.Is(err, windows.ERROR_DISK_FULL) || errors.Is(err, windows.ERROR_HANDLE_DISK_FULL) ||
		errors.Is(err, windows.ERROR_DISK_QUOTA_EXCEEDED)
}
