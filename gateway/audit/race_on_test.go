//go:build race

package audit

// raceEnabled: the race detector slows the million-receipt test tenfold.
const raceEnabled = true
