package witness

import (
	"testing"

	"github.com/accordsai/accords-mcp/gateway/audit"
)

// testWitness exposes the in-process witness to the external tests.
type TestWitness struct {
	W    Witness
	VKey string
}

func startWitness(t *testing.T, key *audit.Key) TestWitness {
	f := newFakeWitness(t, "witness.example/x", key.Verifier())
	return TestWitness{W: f.witness(t), VKey: f.vkey}
}

// StartWitness is startWitness for package witness_test.
var StartWitness = startWitness
