//go:build !windows

package doctor

import (
	"io/fs"
	"os"

	"github.com/accordsai/accords-mcp/platform/privdir"
)

// private fails when fi belongs to another user than this one or root, or
// its mode grants more than want (group or other bits).
func private(check, path string, fi fs.FileInfo, want fs.FileMode, hint string) Result {
	if uid, known := privdir.Owner(fi); known && !privdir.Trusted(uid) {
		return fail(check, "run doctor as the user the server runs as; if that is this user, another user made this and may replace it: keep the database in a folder of your own (ACCORDS_MCP_DB)",
			"%s belongs to uid %d, not to this user (uid %d)", path, uid, os.Getuid())
	}
	got := fi.Mode().Perm()
	if got&^want != 0 {
		return fail(check, hint, "%s is %04o, want %04o (it holds secrets)", path, got, want)
	}
	return ok(check, "%s is %04o", path, got)
}
