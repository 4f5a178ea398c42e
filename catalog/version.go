package catalog

import (
	"fmt"
	"strings"
)

// VersionSortKey encodes a version so that byte order equals the order of
// CompareVersions: semver precedence, pre-releases below releases, numeric
// pre-release identifiers below alphanumeric ones and compared numerically,
// a shorter identifier list below a longer one with the same prefix, and
// the raw string as the final tie-break. The index sorts hits by it.
func VersionSortKey(raw string) string {
	v, ok := ParseVersion(raw)
	if !ok {
		// Invalid versions never reach the store; keep them lowest anyway.
		return "\x00 " + raw
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%020d.%020d.%020d", v.Major(), v.Minor(), v.Patch())
	if pre := v.Prerelease(); pre != "" {
		sb.WriteByte('!')
		for i, id := range strings.Split(pre, ".") {
			if i > 0 {
				// ',' sorts below every identifier character, so a list
				// that is a prefix of another sorts first.
				sb.WriteByte(',')
			}
			if isDigits(id) {
				fmt.Fprintf(&sb, "0%03d%s", len(id), id)
			} else {
				sb.WriteByte('1')
				sb.WriteString(id)
			}
		}
	} else {
		sb.WriteByte('~')
	}
	sb.WriteByte(' ')
	sb.WriteString(raw)
	return sb.String()
}
