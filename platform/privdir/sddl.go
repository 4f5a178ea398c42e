package privdir

import (
	"fmt"
	"strconv"
	"strings"
)

// On Windows a folder's privacy is its security descriptor, not mode
// bits (Go reports every writable folder there as 0777). JudgeSDDL reads
// the descriptor in its documented text form (SDDL, as
// ConvertSecurityDescriptorToStringSecurityDescriptor writes it) and
// applies the same rule as the mode check on unix, made stricter because
// files inherit their folder's access list instead of being created 0600:
// the owner is this user, SYSTEM or Administrators, and no allow entry
// gives anyone else the right to read, write, delete or re-permission the
// folder or what it will hold. Deny entries are not credited: the check
// never depends on their order.

// Access rights an untrusted account must not hold (winnt.h): read data
// or list, write data or add file, append or add subfolder, delete child,
// delete, write DAC, write owner, and the generic all, write and read.
const (
	rightReadData    = 0x1
	rightWriteData   = 0x2
	rightAppendData  = 0x4
	rightDeleteChild = 0x40
	rightDelete      = 0x10000
	rightWriteDAC    = 0x40000
	rightWriteOwner  = 0x80000
	rightGenericAll  = 0x10000000
	rightGenericW    = 0x40000000
	rightGenericR    = 0x80000000

	forbiddenRights = rightReadData | rightWriteData | rightAppendData | rightDeleteChild |
		rightDelete | rightWriteDAC | rightWriteOwner | rightGenericAll | rightGenericW | rightGenericR
)

// sddlRights maps SDDL's two-letter right codes to their mask bits. The
// directory-service codes name the same bits as the file rights
// (CC = read data, DC = write data, ...), which is how Windows writes a
// file mask that matches no file abbreviation.
var sddlRights = map[string]uint32{
	"GA": 0x10000000, "GR": 0x80000000, "GW": 0x40000000, "GX": 0x20000000,
	"RC": 0x20000, "SD": 0x10000, "WD": 0x40000, "WO": 0x80000,
	"RP": 0x10, "WP": 0x20, "CC": 0x1, "DC": 0x2, "LC": 0x4, "SW": 0x8,
	"LO": 0x80, "DT": 0x40, "CR": 0x100,
	"FA": 0x1F01FF, "FR": 0x120089, "FW": 0x120116, "FX": 0x1200A0,
	"KA": 0xF003F, "KR": 0x20019, "KW": 0x20006, "KX": 0x20019,
}

// Well-known accounts trusted beside this user: SYSTEM and the
// Administrators group (who can take any file anyway), and the CREATOR
// OWNER and OWNER RIGHTS placeholders, which stand for the (checked)
// owner.
var trustedSIDs = map[string]bool{
	"SY": true, "S-1-5-18": true,
	"BA": true, "S-1-5-32-544": true,
	"CO": true, "S-1-3-0": true,
	"OW": true, "S-1-3-4": true,
}

// sidNames are the aliases an error message spells out.
var sidNames = map[string]string{
	"WD": "Everyone", "AU": "Authenticated Users", "BU": "Users", "BG": "Guests",
	"IU": "Interactive", "NU": "Network", "AN": "Anonymous", "DU": "Domain Users",
	"S-1-1-0": "Everyone", "S-1-5-11": "Authenticated Users", "S-1-5-32-545": "Users",
}

func sidLabel(sid string) string {
	if n, ok := sidNames[sid]; ok {
		return fmt.Sprintf("%s (%s)", n, sid)
	}
	return sid
}

// isSelf reports whether sid (a SID string or an SDDL alias) is self.
// SDDL writes the machine's built-in Administrator as LA.
func isSelf(sid, self string) bool {
	return sid == self || (sid == "LA" && strings.HasSuffix(self, "-500"))
}

func trusted(sid, self string) bool { return trustedSIDs[sid] || isSelf(sid, self) }

// JudgeSDDL returns nil when the descriptor sddl of path keeps it private
// to self (this user's SID string), or an error wrapping ErrUnsafe that
// names the account and how to fix it. A descriptor it cannot read is
// unsafe: the check fails closed.
func JudgeSDDL(path, sddl, self string) error {
	owner, dacl, hasDACL, err := splitSDDL(sddl)
	var flags string
	var aces []ace
	if err == nil {
		flags, aces, err = splitDACL(dacl)
	}
	if err != nil {
		return fmt.Errorf("%w: %s: its access list cannot be read (%w); keep the database in a folder of your own under your profile (ACCORDS_MCP_DB)", ErrUnsafe, path, err)
	}
	if owner == "" || !trusted(owner, self) {
		return fmt.Errorf("%w: %s is owned by %s, not by this user (%s): that account could put files of its own there; keep the database in a folder of your own under your profile (ACCORDS_MCP_DB)",
			ErrUnsafe, path, sidLabel(owner), self)
	}
	if !hasDACL || strings.Contains(flags, "NO_ACCESS_CONTROL") {
		return fmt.Errorf("%w: %s has no access list, so every account may read and write it; keep the database in a folder of your own under your profile (ACCORDS_MCP_DB)", ErrUnsafe, path)
	}
	for _, a := range aces {
		if !a.allow || trusted(a.sid, self) || a.mask&forbiddenRights == 0 {
			continue
		}
		return fmt.Errorf("%w: %s lets %s read or write it or the files it holds (access entry %s); remove that entry (`icacls \"%s\"` lists them), or keep the database in a folder of your own under your profile (ACCORDS_MCP_DB)",
			ErrUnsafe, path, sidLabel(a.sid), a.text, path)
	}
	return nil
}

type ace struct {
	allow bool
	mask  uint32
	sid   string
	text  string
}

// splitSDDL returns the owner and the DACL part (everything after "D:",
// up to a following "S:" section) of sddl.
func splitSDDL(sddl string) (owner, dacl string, hasDACL bool, err error) {
	rest := sddl
	for rest != "" {
		if len(rest) < 2 || rest[1] != ':' {
			return "", "", false, fmt.Errorf("unexpected %q", rest)
		}
		tag := rest[0]
		rest = rest[2:]
		end := nextSection(rest)
		body := rest[:end]
		rest = rest[end:]
		switch tag {
		case 'O':
			owner = body
		case 'D':
			dacl, hasDACL = body, true
		case 'G', 'S':
		default:
			return "", "", false, fmt.Errorf("unknown section %q", string(tag))
		}
	}
	return owner, dacl, hasDACL, nil
}

// nextSection finds the next "X:" section start outside parentheses; an
// unclosed parenthesis runs to the end (splitDACL then refuses it).
func nextSection(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '(' {
			j := closing(s[i:])
			if j < 0 {
				return len(s)
			}
			i += j
			continue
		}
		if i+1 < len(s) && s[i+1] == ':' && strings.IndexByte("OGDS", s[i]) >= 0 {
			return i
		}
	}
	return len(s)
}

// splitDACL parses "flags(ace)(ace)...".
func splitDACL(dacl string) (string, []ace, error) {
	i := strings.IndexByte(dacl, '(')
	if i < 0 {
		return dacl, nil, nil
	}
	flags, rest := dacl[:i], dacl[i:]
	var aces []ace
	for rest != "" {
		if rest[0] != '(' {
			return "", nil, fmt.Errorf("unexpected %q", rest)
		}
		end := closing(rest)
		if end < 0 {
			return "", nil, fmt.Errorf("unterminated entry %q", rest)
		}
		a, err := parseACE(rest[:end+1])
		if err != nil {
			return "", nil, err
		}
		aces = append(aces, a)
		rest = rest[end+1:]
	}
	return flags, aces, nil
}

// closing is the index of the parenthesis closing s[0], or -1;
// conditional entries nest parentheses.
func closing(s string) int {
	depth := 0
	for i := range len(s) {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// parseACE reads "(type;flags;rights;object;inherit-object;sid...)".
// Deny and audit types grant nothing; every other type is read as an
// allow entry, so a type this parser does not know fails closed.
func parseACE(text string) (ace, error) {
	fields := strings.Split(text[1:len(text)-1], ";")
	if len(fields) < 6 {
		return ace{}, fmt.Errorf("entry %s has %d fields, want 6", text, len(fields))
	}
	a := ace{text: text, sid: fields[5]}
	switch fields[0] {
	case "D", "OD", "XD", "AU", "OU", "XU", "ML", "SP":
	default:
		a.allow = true
	}
	mask, err := parseRights(fields[2])
	if err != nil {
		return ace{}, fmt.Errorf("entry %s: %w", text, err)
	}
	a.mask = mask
	return a, nil
}

func parseRights(s string) (uint32, error) {
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		v, err := strconv.ParseUint(s[2:], 16, 32)
		if err != nil {
			return 0, fmt.Errorf("rights %q: %w", s, err)
		}
		return uint32(v), nil
	}
	if len(s)%2 != 0 {
		return 0, fmt.Errorf("rights %q are not two-letter codes", s)
	}
	var mask uint32
	for i := 0; i < len(s); i += 2 {
		v, ok := sddlRights[s[i:i+2]]
		if !ok {
			return 0, fmt.Errorf("unknown right %q", s[i:i+2])
		}
		mask |= v
	}
	return mask, nil
}
