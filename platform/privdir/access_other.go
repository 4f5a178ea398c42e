//go:build !windows

package privdir

import (
	"fmt"
	"io/fs"
	"os"
)

// checkAccess refuses a path owned by an untrusted user or writable by
// its group or others.
func checkAccess(path string, fi fs.FileInfo) error {
	if uid, ok := Owner(fi); ok && !Trusted(uid) {
		return fmt.Errorf("%w: %s belongs to uid %d, not to this user (uid %d): that user could put a socket or files of theirs there; keep the database in a folder of your own (ACCORDS_MCP_DB)",
			ErrUnsafe, path, uid, os.Getuid())
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%w: %s is %04o: other users may create files in it, and could put a socket or files of theirs there; chmod 700 %s, or keep the database in a folder of your own (ACCORDS_MCP_DB)",
			ErrUnsafe, path, perm, path)
	}
	return nil
}
