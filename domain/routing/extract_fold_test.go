package routing

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExtractFoldsNonASCII: (?i) folds some non-ASCII letters to ASCII
// ones, and extraction follows the patterns.
func TestExtractFoldsNonASCII(t *testing.T) {
	reg, err := Default()
	require.NoError(t, err)
	extract := func(s string) string {
		out, err := json.Marshal(reg.extract(newText(s)))
		require.NoError(t, err)
		return string(out)
	}
	assert.Contains(t, extract("meſſage id: abc123"), `"message_id":"abc123"`)
	assert.Contains(t, extract("show the laſt 5 mails"), `"page_limit":5`)
}
