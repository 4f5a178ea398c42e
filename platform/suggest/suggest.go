// Package suggest finds the known name an unknown one was probably meant to
// be, for "did you mean …?" warnings.
package suggest

import "strings"

// MaxName bounds the names Closest compares; longer ones are not slips.
const MaxName = 128

// Closest is the known name nearest to name by case-folded edit distance
// when within a third of its length (at least 1), else ""; ties go to the
// first of known.
func Closest(name string, known []string) string {
	if len(name) > MaxName {
		return ""
	}
	limit := max(1, len(name)/3)
	best, bestD := "", limit+1
	for _, k := range known {
		if d := EditDistance(strings.ToLower(name), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// EditDistance is the byte-wise Levenshtein distance of two short strings.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
