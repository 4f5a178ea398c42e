package remote

import (
	"fmt"
	"testing"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func selectionIndex(t *testing.T, versions ...string) []IndexItem {
	t.Helper()
	var items []item
	for i, v := range versions {
		items = append(items, item{"cookbook_id": "cb", "version": v, "download_url": fmt.Sprintf("https://h/%d", i)})
	}
	items = append(items, item{"cookbook_id": "other", "version": "9.9.9", "download_url": "https://h/o"})
	idx, err := ParseIndex(indexJSON(items...), "s")
	require.NoError(t, err)
	require.Empty(t, idx.Invalid)
	return idx.Items
}

func TestSelectItemConstraints(t *testing.T) {
	items := selectionIndex(t, "1.0.0", "1.2.0", "1.2.7", "1.3.0", "1.3.4", "1.10.0", "2.0.0", "2.1.0-beta.1", "3.0.0-rc.1", "1.3.4+build.2")
	cases := []struct {
		want string
		pre  bool
		got  string
	}{
		{"", false, "2.0.0"},
		{"", true, "3.0.0-rc.1"},
		{"1.2.7", false, "1.2.7"},
		{"v1.2.7", false, "1.2.7"},
		{"^1.2", false, "1.10.0"},
		{"~1.3.0", false, "1.3.4+build.2"},
		{"~1.2", false, "1.2.7"},
		{">=1.0 <2", false, "1.10.0"},
		{">=1.0, <1.3", false, "1.2.7"},
		{"1.2", false, "1.2.7"},
		{"1.x", false, "1.10.0"},
		{"^2", false, "2.0.0"},
		{"^2", true, "2.1.0-beta.1"},
		{">=2.1.0-0", false, "3.0.0-rc.1"},
		{"3.0.0-rc.1", false, "3.0.0-rc.1"},
		{"1.3.4+build.2", false, "1.3.4+build.2"},
		{"1.3.4", false, "1.3.4"},
		{"*", false, "2.0.0"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%q pre=%v", c.want, c.pre), func(t *testing.T) {
			it, err := SelectItem(items, "cb", c.want, c.pre)
			require.NoError(t, err)
			assert.Equal(t, c.got, it.Version)
			assert.Equal(t, "cb", it.CookbookID)
		})
	}
}

func TestSelectItemFailures(t *testing.T) {
	items := selectionIndex(t, "1.0.0", "1.1.0", "2.0.0-rc.1")
	_, err := SelectItem(items, "cb", "^3", false)
	ae := requireCode(t, err, apperr.CodeCatalogNotFound)
	assert.Equal(t, "no version in the remote index satisfies the constraint", ae.Message)
	assert.Equal(t, []string{"2.0.0-rc.1", "1.1.0", "1.0.0"}, ae.Details["available_versions"])

	_, err = SelectItem(items, "cb", "1.0.1", false)
	ae = requireCode(t, err, apperr.CodeCatalogNotFound)
	assert.Equal(t, "cookbook version not found in remote index", ae.Message)

	_, err = SelectItem(items, "nope", "", false)
	ae = requireCode(t, err, apperr.CodeCatalogNotFound)
	assert.Equal(t, "nope", ae.Details["cookbook_id"])

	_, err = SelectItem(items, "cb", "^^1", false)
	ae = requireCode(t, err, apperr.CodeValidation)
	assert.Equal(t, "version", ae.Details["field"])

	_, err = SelectItem(items, "cb", ">2", false)
	requireCode(t, err, apperr.CodeCatalogNotFound)
	it, err := SelectItem(items, "cb", ">2.0.0-0", false)
	require.NoError(t, err, "a constraint naming a pre-release admits pre-releases")
	assert.Equal(t, "2.0.0-rc.1", it.Version)

	only := selectionIndex(t, "0.1.0-alpha")
	_, err = SelectItem(only, "cb", "", false)
	ae = requireCode(t, err, apperr.CodeCatalogNotFound)
	assert.Contains(t, ae.Message, "pre-release")
	it, err = SelectItem(only, "cb", "", true)
	require.NoError(t, err)
	assert.Equal(t, "0.1.0-alpha", it.Version)
}
