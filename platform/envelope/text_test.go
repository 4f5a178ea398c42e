package envelope

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// D22: the text drops empty values and correlation fields, keeps the
// next step, and is bounded.
func TestText(t *testing.T) {
	assert.Equal(t, `{"a":1,"c":{"d":false}}`, Text([]byte(`{"ok":true,"data":{"a":1,"b":"","c":{"d":false,"e":[]},"f":null},"error":null,"meta":{"request_id":"r","vault_http_status":200,"vault_code":""}}`)))
	assert.Equal(t, "ok\nwarnings: unknown argument \"x\"", Text([]byte(`{"ok":true,"data":{},"error":null,"meta":{"warnings":["unknown argument \"x\""]}}`)))
	assert.Equal(t, "MCP_NETWORK_ERROR (retryable): Vault said no; call again\ndetails: {\"vault_error\":{\"details\":{\"field\":\"to\"}}}",
		Text([]byte(`{"ok":false,"data":null,"error":{"code":"MCP_NETWORK_ERROR","category":"network","message":"Vault said no; call again","retryable":true,"vault_code":"X",`+
			`"details":{"request_id":"r","vault_http_status":502,"vault_error":{"code":"X","message":"Vault said no","details":{"field":"to"}}}},"meta":{}}`)))
	long := Text([]byte(`{"ok":true,"data":{"s":"` + strings.Repeat("é", MaxTextChars) + `"},"error":null,"meta":{}}`))
	assert.LessOrEqual(t, len(long), MaxTextChars+200)
	assert.Contains(t, long, "[cut at")
}
