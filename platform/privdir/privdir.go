// Package privdir checks that the database folder is private: owned by
// this user (or root) and writable by no one else, since it holds the
// control socket every launch sends its Vault token to.
package privdir

import (
	"errors"
	"fmt"
	"os"
)

// ErrUnsafe marks a folder other users may write to or own.
var ErrUnsafe = errors.New("unsafe database folder")

// Trusted reports whether uid is this process's user or root.
func Trusted(uid int) bool { return uid == os.Getuid() || uid == 0 }

// Check returns nil when dir (links followed) is owned by a Trusted user
// and not group- or world-writable; missing wraps fs.ErrNotExist, unsafe
// wraps ErrUnsafe with how to fix it.
func Check(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a folder", ErrUnsafe, dir)
	}
	if uid, ok := Owner(fi); ok && !Trusted(uid) {
		return fmt.Errorf("%w: %s belongs to uid %d, not to this user (uid %d): that user could put a socket or files of theirs there; keep the database in a folder of your own (ACCORDS_MCP_DB)",
			ErrUnsafe, dir, uid, os.Getuid())
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%w: %s is %04o: other users may create files in it, and could put a socket or files of theirs there; chmod 700 %s, or keep the database in a folder of your own (ACCORDS_MCP_DB)",
			ErrUnsafe, dir, perm, dir)
	}
	return nil
}

// Ensure creates dir (mode 0700, with its missing parents) when it does
// not exist, then checks it.
func Ensure(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return Check(dir)
}
