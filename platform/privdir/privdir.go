// Package privdir checks that the database folder is private: owned by
// this user (or root) and writable by no one else, since it holds the
// database, the key file and (on unix) the control socket every launch
// sends its Vault token to.
package privdir

import (
	"errors"
	"fmt"
	"os"
)

// ErrUnsafe marks a path another user owns or may write to (on Windows,
// also one another account may read).
var ErrUnsafe = errors.New("unsafe database folder")

// Trusted reports whether uid is this process's user or root.
func Trusted(uid int) bool { return uid == os.Getuid() || uid == 0 }

// Check returns nil when dir (links followed) is private: on unix owned
// by a Trusted user and not group- or world-writable, on Windows as
// JudgeSDDL rules. Missing wraps fs.ErrNotExist, unsafe wraps ErrUnsafe
// with how to fix it.
func Check(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a folder", ErrUnsafe, dir)
	}
	return checkAccess(dir, fi)
}

// Ensure creates dir (mode 0700, with its missing parents) when it does
// not exist, then checks it.
func Ensure(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return Check(dir)
}
