package catalog

import (
	"strconv"
	"strings"
)

// VersionSortKey encodes a version ("1.4.0" → "a1a4a0~ 1.4.0") so that byte
// order equals CompareVersions order; the index sorts hits by it.
func VersionSortKey(raw string) string {
	v, ok := ParseVersion(raw)
	if !ok {
		// Invalid versions never reach the store; keep them lowest anyway.
		return "  " + raw
	}
	var sb strings.Builder
	for _, n := range []uint64{v.Major(), v.Minor(), v.Patch()} {
		sb.WriteString(sortableNumber(strconv.FormatUint(n, 10)))
	}
	if pre := v.Prerelease(); pre != "" {
		sb.WriteByte('!')
		for i, id := range strings.Split(pre, ".") {
			if i > 0 {
				// ',' sorts below every identifier character, so a list
				// that is a prefix of another sorts first.
				sb.WriteByte(',')
			}
			if isDigits(id) {
				sb.WriteByte('0')
				sb.WriteString(sortableNumber(id))
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

// sortableNumber prefixes a decimal without leading zeros by a letter
// giving its length ('a' = 1 digit), so byte order is numeric order.
func sortableNumber(digits string) string {
	return string(rune('a'+len(digits)-1)) + digits
}
