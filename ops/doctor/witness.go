package doctor

import (
	"strconv"
	"strings"

	"github.com/accordsai/accords-mcp/gateway/audit"
)

// witnessCheck reports the witnesses of ACCORDS_MCP_AUDIT_WITNESS as the
// server last found them (false when none was ever offered a
// checkpoint): WARN for one whose last submission failed (unreachable or
// refusing) or that has not cosigned the newest checkpoint.
func witnessCheck(in Inputs) (Result, bool) {
	states, err := audit.WitnessStates(in.DB)
	if err != nil {
		return warn("audit witnesses", "", "cannot read the witness states: %v", err), true
	}
	if len(states) == 0 {
		return Result{}, false
	}
	var newest uint64
	if cp, err := audit.NewestCheckpoint(in.DB); err == nil {
		newest, _ = audit.CheckpointSize(cp)
	}
	var bad, good []string
	for _, st := range states {
		switch {
		case st.Error != "":
			bad = append(bad, st.URL+" ("+st.Name+"): "+st.Error)
		case st.Cosigned < newest:
			bad = append(bad, st.URL+" ("+st.Name+"): behind, cosigned "+strconv.FormatUint(st.Cosigned, 10)+" of "+strconv.FormatUint(newest, 10)+" receipts")
		default:
			good = append(good, st.URL+" cosigned "+strconv.FormatUint(st.Cosigned, 10))
		}
	}
	if len(bad) > 0 {
		return warn("audit witnesses", "check the witness URL and that it knows this log (its origin and the key accords-mcp audit key prints); checkpoints are cosigned again once it answers",
			"%s", strings.Join(append(bad, good...), "; ")), true
	}
	return ok("audit witnesses", "%s", strings.Join(good, "; ")), true
}
