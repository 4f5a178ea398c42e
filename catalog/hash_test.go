package catalog

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReferenceHashes(t *testing.T) {
	for v, want := range map[string]string{
		"1.1.0": "b02ab3dc07e9ed8b76fb33033c1b5a5f0d54930e1b6fb7be988d3264648af578",
		"1.2.0": "cf765c62b0cc19fc877d2f131816277950352c78dc52c70257b9c0cc2eaf07fa",
		"1.3.0": "6dbb3eb1976f454d3a664293abc38a5b69ccaf7b21f910906b45c9c2a6f9d6b3",
	} {
		b, err := DecodeBundle(loadFixture(t, v))
		require.NoError(t, err)
		_, h, err := Prepare(b)
		require.NoError(t, err)
		e := b.Entry("gmail_recipe_messages_list_inbox_v1")
		if e != nil {
			delete(e.Extra, "query_ast_v1")
			h, _ = b.ContentHash()
		}
		t.Log(v, h == want, h)
	}
}
