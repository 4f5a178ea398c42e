package redact

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestToken(t *testing.T) {
	for _, c := range []struct{ text, token, want string }{
		// A short token inside words and URLs is left alone...
		{`Get "unix:///run/vc.sock": dial unix: no such file`, "x", `Get "unix:///run/vc.sock": dial unix: no such file`},
		// ...and masked where it stands alone.
		{"Authorization: Bearer x; retry", "x", "Authorization: Bearer ***; retry"},
		{"x", "x", "***"},
		{"token=dev&next=1 dev", "dev", "token=***&next=1 ***"},
		{"devdev dev", "dev", "devdev ***"},
		// A long token is masked wherever it occurs, glued or not.
		{"Bearervc_tok_0123456789 and vc_tok_0123456789.", "vc_tok_0123456789", "Bearer*** and ***."},
		{"nothing here", "", "nothing here"},
	} {
		assert.Equal(t, c.want, Token(c.text, c.token, "***"), c.text)
	}
}
