//go:build windows

package doctor

import (
	"io/fs"

	"github.com/accordsai/accords-mcp/platform/privdir"
)

// private fails when path's security descriptor lets an account other
// than this user, SYSTEM and Administrators own, read or write it
// (privdir.CheckACL); mode bits mean nothing on Windows.
func private(check, path string, _ fs.FileInfo, _ fs.FileMode, _ string) Result {
	if err := privdir.CheckACL(path); err != nil {
		return fail(check, "keep the database in a folder of your own under your profile (ACCORDS_MCP_DB), or remove the access entry the message names", "%v", err)
	}
	return ok(check, "%s: only this user, SYSTEM and Administrators have access", path)
}
