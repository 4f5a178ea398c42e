package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAuditSectionIsOffByDefaultAndStrict(t *testing.T) {
	t.Parallel()
	p, err := Parse([]byte(""), "toml", known)
	require.NoError(t, err)
	assert.Equal(t, Audit{}, p.Audit)
	assert.Equal(t, Audit{}, Default(known).Audit)

	p, err = Parse([]byte("[audit]\nlog_params = true\nlog_results = false\n"), "toml", known)
	require.NoError(t, err)
	assert.Equal(t, Audit{LogParams: true}, p.Audit)
	p, err = Parse([]byte(`{"audit": {"log_results": true}}`), "json", known)
	require.NoError(t, err)
	assert.Equal(t, Audit{LogResults: true}, p.Audit)

	_, err = Parse([]byte("[audit]\nlog_param = true\n"), "toml", known)
	require.ErrorContains(t, err, "audit.log_param", "a misspelt key is refused, not ignored")
}

// An elevated capability: "*" grants it to stdio only; anonymous and
// authenticated callers hold it when their list names it.
func TestElevatedCapabilitiesNeedNaming(t *testing.T) {
	t.Parallel()
	k := known
	k.Capabilities = append(append([]string(nil), known.Capabilities...), "receipts_emit")
	k.Elevated = []string{"receipts_emit"}
	assert.False(t, Default(k).Anonymous.Allows("receipts_emit"))
	assert.True(t, Default(k).Stdio.Allows("receipts_emit"))

	p, err := Parse([]byte(`
[[callers]]
id = "plain"
token_sha256 = "`+HashToken("a")+`"

[[callers]]
id = "named"
token_sha256 = "`+HashToken("b")+`"
capabilities = ["*", "receipts_emit"]
`), "toml", k)
	require.NoError(t, err)
	plain, _ := p.Lookup("plain")
	named, _ := p.Lookup("named")
	assert.False(t, plain.Allows("receipts_emit"))
	assert.True(t, plain.Withholds("receipts_emit"))
	assert.True(t, named.Allows("receipts_emit"))
	assert.False(t, p.Anonymous.Allows("receipts_emit"))
	assert.True(t, p.Stdio.Allows("receipts_emit"))

	p, err = Parse([]byte("[anonymous]\ncapabilities = [\"*\", \"receipts_emit\"]\n"), "toml", k)
	require.NoError(t, err)
	assert.True(t, p.Anonymous.Allows("receipts_emit"))
}
