//go:build windows

package privdir

import (
	"fmt"
	"io/fs"

	"golang.org/x/sys/windows"
)

func checkAccess(path string, _ fs.FileInfo) error { return CheckACL(path) }

// CheckACL judges path's security descriptor (owner and access list) with
// JudgeSDDL against this process's user.
func CheckACL(path string) error {
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return fmt.Errorf("reading the access list of %s: %w", path, err)
	}
	user, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return fmt.Errorf("reading this process's user: %w", err)
	}
	return JudgeSDDL(path, sd.String(), user.User.Sid.String())
}
