package suggest

import (
	"strings"
	"testing"
)

func TestClosest(t *testing.T) {
	known := []string{"cookbook_id", "limit", "url"}
	for name, want := range map[string]string{
		"limt":                         "limit", // one edit
		"LIMIT":                        "limit", // case folded
		"urll":                         "url",
		"__proto__":                    "", // nothing near
		"x":                            "", // one edit allowed, but nothing within it here
		"cookbookid":                   "cookbook_id",
		strings.Repeat("a", MaxName+1): "",
	} {
		if got := Closest(name, known); got != want {
			t.Errorf("Closest(%.20q) = %q, want %q", name, got, want)
		}
	}
	if d := EditDistance("kitten", "sitting"); d != 3 {
		t.Errorf("EditDistance(kitten, sitting) = %d, want 3", d)
	}
}
