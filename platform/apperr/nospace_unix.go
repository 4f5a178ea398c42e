//go:build unix

package apperr

import (
	"errors"
	"syscall"
)

// noSpace reports ENOSPC or EDQUOT: both pass once space is freed, and
// neither leaves a partial transaction.
func noSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
