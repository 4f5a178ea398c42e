package store

// SetAfterFleetCount sets the hook JoinFleet runs between its first count
// and its watch; the returned func removes it.
func SetAfterFleetCount(fn func()) func() {
	afterFleetCount = fn
	return func() { afterFleetCount = nil }
}
