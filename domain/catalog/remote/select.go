package remote

import (
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/accordsai/accords-mcp/platform/apperr"
)

// newer orders items by semver precedence, then by the raw version string so
// versions differing only in build metadata still order deterministically.
func newer(a, b IndexItem) bool {
	if c := a.semver.Compare(b.semver); c != 0 {
		return c > 0
	}
	return a.Version > b.Version
}

// SelectItem picks the index item to install for cookbookID.
//
//   - want empty: the highest release (pre-releases only with includePre);
//   - want equal to an item's version string: that item, pre-release or not;
//   - want a full semantic version ("1.2.3", "v1.2.3"): the item with equal
//     precedence;
//   - otherwise want is a constraint ("^1.2", "~1.3.0", ">=1.0 <2", "1.2"),
//     resolved to the highest matching version. Pre-releases match only when
//     includePre is set or the constraint itself names a pre-release.
func SelectItem(items []IndexItem, cookbookID, want string, includePre bool) (IndexItem, error) {
	want = strings.TrimSpace(want)
	var cands []IndexItem
	for _, it := range items {
		if it.CookbookID == cookbookID {
			cands = append(cands, it)
		}
	}
	sort.Slice(cands, func(i, j int) bool { return newer(cands[i], cands[j]) })
	versions := make([]string, 0, len(cands))
	for _, it := range cands {
		versions = append(versions, it.Version)
	}
	notFound := func(msg string) *apperr.Error {
		e := apperr.New(apperr.CodeCatalogNotFound, "%s", msg).With("cookbook_id", cookbookID).With("version", want)
		return e.With("available_versions", versions)
	}
	if len(cands) == 0 {
		return IndexItem{}, notFound("cookbook version not found in remote index")
	}
	if want == "" {
		for _, it := range cands {
			if includePre || it.semver.Prerelease() == "" {
				return it, nil
			}
		}
		return IndexItem{}, notFound("only pre-release versions are published for this cookbook; name one or set include_prerelease")
	}
	for _, it := range cands {
		if it.Version == want {
			return it, nil
		}
	}
	if v, err := semver.StrictNewVersion(strings.TrimPrefix(want, "v")); err == nil {
		for _, it := range cands {
			if it.semver.Equal(v) {
				return it, nil
			}
		}
		return IndexItem{}, notFound("cookbook version not found in remote index")
	}
	cs, err := semver.NewConstraint(want)
	if err != nil {
		return IndexItem{}, apperr.Validation("version", "version must be an exact version or a semver constraint such as ^1.2, ~1.3.0 or >=1.0 <2: %v", err).
			With("version", want)
	}
	cs.IncludePrerelease = includePre
	for _, it := range cands {
		if cs.Check(it.semver) {
			return it, nil
		}
	}
	return IndexItem{}, notFound("no version in the remote index satisfies the constraint")
}
