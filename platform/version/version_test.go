package version

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIDNamesVersionCommitAndModifiedBinary(t *testing.T) {
	digest := func() string { return "0123456789ab" }
	clean := Info{Version: "1.2.3", Commit: "0d74cd5a1b2c3d4e5f60718293a4b5c6d7e8f901"}
	assert.Equal(t, "1.2.3 (commit 0d74cd5a1b2c)", clean.id(digest), "a clean build is its version and short commit")

	dirty := clean
	dirty.Modified = true
	assert.Equal(t, "1.2.3 (commit 0d74cd5a1b2c, modified, binary 0123456789ab)", dirty.id(digest),
		"builds of one modified tree differ by their executable")
	assert.Equal(t, "1.2.3 (commit 0d74cd5a1b2c, modified)", dirty.id(func() string { return "" }))

	assert.Equal(t, "0.1.0 (commit unknown, binary 0123456789ab)", Info{Version: "0.1.0", Commit: "unknown"}.id(digest),
		"builds without a stamped commit (go run) differ by their executable")
	assert.Equal(t, "0.1.0 (commit unknown)", Info{Version: "0.1.0", Commit: "unknown"}.id(func() string { return "" }))
	assert.NotEmpty(t, ID())
	assert.Equal(t, ID(), ID(), "computed once")
}
