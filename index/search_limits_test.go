package index

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestQueryTermsAndClip(t *testing.T) {
	assert.Equal(t, 4, QueryTerms("send gmail.message, now!"))
	assert.Equal(t, "google.gmail.send.v1", ClipQuery("google.gmail.send.v1"), "a text within the limits is kept exactly")
	long := strings.Repeat("word ", 100)
	clipped := ClipQuery(long)
	assert.Equal(t, MaxQueryTerms, QueryTerms(clipped))
	assert.LessOrEqual(t, len(clipped), MaxQueryBytes)
	wide := strings.Repeat("x", 3000)
	assert.Empty(t, ClipQuery(wide), "one word longer than the byte limit leaves nothing to search")
	assert.LessOrEqual(t, len(ClipQuery(strings.Repeat(strings.Repeat("y", 60)+" ", 30))), MaxQueryBytes)
}
