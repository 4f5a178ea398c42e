package app

import (
	"github.com/accordsai/accords-mcp/platform/metrics"
	"github.com/accordsai/accords-mcp/platform/resident"
)

// NewResidentGovernor makes the governor of the serving process's
// file-backed resident set (see package resident), bounded by
// Config.MappedResidentMax, with the executable as its first source. Run
// it from the start; GovernResident adds the app's mappings once open.
func NewResidentGovernor(max int64, onError func(source string, err error)) *resident.Governor {
	g := resident.New(resident.Options{Budget: max, OnError: onError})
	if exe, err := resident.Executable(); err == nil {
		g.Add("executable", exe)
	} else if onError != nil {
		onError("executable", err)
	}
	return g
}

// GovernResident adds the database file's and the index segments' mappings
// to g, and its figures to /metrics.
func (a *App) GovernResident(g *resident.Governor) {
	a.Metrics.Gauge(metrics.NameMappedBytes, "File-backed resident set: pages of the database, index and executable files mapped in.", func() (float64, bool) {
		n, err := resident.FileResident()
		return float64(n), err == nil
	})
	a.Metrics.Registry.NewCounterFunc(metrics.NameMappedRelease, "Times the mapped pages were released for passing ACCORDS_MCP_MAPPED_RESIDENT_MAX.", func() float64 {
		return float64(g.Trims())
	})
	g.Add("database", func(release func(resident.Range)) error { return a.DB.Mapped(asRanges(release)) })
	if a.Catalog != nil {
		g.Add("index", func(release func(resident.Range)) error { return a.Catalog.IndexMapped(asRanges(release)) })
	}
}

// asRanges adapts release to the (address, length) callbacks of the store
// and the index, which know nothing of package resident.
func asRanges(release func(resident.Range)) func(addr uintptr, n int) {
	return func(addr uintptr, n int) { release(resident.Range{Addr: addr, Len: n}) }
}
