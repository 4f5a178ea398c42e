package privdir_test

import (
	"testing"

	"github.com/accordsai/accords-mcp/platform/privdir"
	"github.com/stretchr/testify/assert"
)

// The descriptors are what Windows writes (SDDL) for folders a user
// meets: the default database folder under %AppData%, a folder made at
// the root of C:, and folders changed by hand or by another account.
func TestJudgeSDDL(t *testing.T) {
	const me = "S-1-5-21-1004336348-1177238915-682003330-1001"
	const other = "S-1-5-21-1004336348-1177238915-682003330-1002"
	const profile = "D:AI(A;OICIID;FA;;;SY)(A;OICIID;FA;;;BA)(A;OICIID;FA;;;" + me + ")"

	private := map[string]string{
		"under %AppData% (the default)": "O:" + me + "G:" + me + profile,
		"made by an elevated prompt":    "O:BAG:SY" + profile,
		"protected, this user only":     "O:" + me + "D:P(A;OICI;FA;;;" + me + ")",
		"an empty access list":          "O:" + me + "D:P",
		"creator owner, inherit only":   "O:" + me + profile + "(A;OICIIO;GA;;;CO)",
		"others may only traverse":      "O:" + me + profile + "(A;;0x100020;;;WD)",
		"a deny entry grants nothing":   "O:" + me + "D:(D;OICI;FA;;;WD)(A;OICI;FA;;;" + me + ")",
		"a system access list follows":  "O:" + me + profile + "S:AI(AU;SA;FA;;;WD)",
		"owner rights":                  "O:" + me + profile + "(A;OICI;FA;;;OW)",
		"read-control for everyone":     "O:" + me + profile + "(A;;RC;;;WD)",
	}
	for name, sddl := range private {
		assert.NoError(t, privdir.JudgeSDDL(`C:\x`, sddl, me), name)
	}
	// SDDL writes the machine's built-in Administrator (RID 500) as LA.
	const admin = "S-1-5-21-1004336348-1177238915-682003330-500"
	assert.NoError(t, privdir.JudgeSDDL(`C:\x`, "O:LAD:(A;OICI;FA;;;LA)", admin), "built-in Administrator account")

	unsafe := map[string]struct{ sddl, says string }{
		"a folder at the root of C:": {"O:" + me + "D:AI(A;OICIID;FA;;;BA)(A;OICIID;FA;;;SY)(A;OICIID;0x1200a9;;;BU)(A;ID;0x1301bf;;;AU)(A;OICIIOID;SDGXGWGR;;;AU)",
			"Users (BU)"},
		"everyone, full control":        {"O:" + me + profile + "(A;OICI;FA;;;WD)", `icacls "C:\accords"`},
		"another user may write":        {"O:" + me + profile + "(A;OICI;0x1301bf;;;" + other + ")", other},
		"another user may read":         {"O:" + me + profile + "(A;OICI;FR;;;" + other + ")", other},
		"another user may add files":    {"O:" + me + profile + "(A;;DC;;;" + other + ")", other},
		"another user may re-permit":    {"O:" + me + profile + "(A;;WD;;;" + other + ")", other},
		"inherited by files only":       {"O:" + me + profile + "(A;OIIO;GR;;;AU)", "Authenticated Users (AU)"},
		"generic write by SID":          {"O:" + me + profile + "(A;OICI;GW;;;S-1-1-0)", "Everyone (S-1-1-0)"},
		"conditional entry":             {"O:" + me + profile + `(XA;OICI;FA;;;` + other + `;(@User.Project Any_of {"x"}))`, other},
		"owned by another user":         {"O:" + other + profile, "owned by " + other},
		"owned by Users":                {"O:BU" + profile, "owned by Users (BU)"},
		"no access list":                {"O:" + me + "D:NO_ACCESS_CONTROL", "no access list"},
		"no DACL section":               {"O:" + me + "G:" + me, "no access list"},
		"no owner":                      {profile, "owned by"},
		"Administrator alias, not self": {"O:LA" + profile, "owned by LA"},
		"unknown right":                 {"O:" + me + profile + "(A;;ZZ;;;WD)", "cannot be read"},
		"bad hex right":                 {"O:" + me + profile + "(A;;0xZZ;;;WD)", "cannot be read"},
		"short entry":                   {"O:" + me + "D:(A;;FA)", "cannot be read"},
		"unterminated entry":            {"O:" + me + "D:(A;;FA;;;WD", "cannot be read"},
		"text between entries":          {"O:" + me + profile + "junk(A;;FA;;;WD)", "cannot be read"},
		"unknown section":               {"Q:x", "cannot be read"},
		"not SDDL":                      {"hello", "cannot be read"},
	}
	for name, c := range unsafe {
		err := privdir.JudgeSDDL(`C:\accords`, c.sddl, me)
		if assert.ErrorIs(t, err, privdir.ErrUnsafe, name) {
			assert.ErrorContains(t, err, c.says, name)
			assert.ErrorContains(t, err, `C:\accords`, name)
		}
	}
}

func FuzzJudgeSDDL(f *testing.F) {
	f.Add("O:BAG:SYD:AI(A;OICIID;FA;;;SY)(A;OICIID;0x1200a9;;;BU)")
	f.Add(`O:SYD:(XA;;FA;;;WD;(a(b)))S:(AU;SA;FA;;;WD)`)
	f.Fuzz(func(t *testing.T, sddl string) {
		err := privdir.JudgeSDDL("p", sddl, "S-1-5-21-1-2-3-1001")
		if err != nil {
			assert.ErrorIs(t, err, privdir.ErrUnsafe)
		}
	})
}
