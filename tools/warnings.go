package tools

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/accordsai/accords-mcp/platform/suggest"
	"github.com/google/jsonschema-go/jsonschema"
)

// Unknown arguments are not refused (predecessor clients send extras) and
// not silently dropped either (D21): the call goes on and meta.warnings
// names each one, with the closest known name when there is one, so an
// agent that misspelt "limit" learns it from the first answer.

// maxWarnings bounds the warnings of one call: a client sending thousands of
// junk keys gets a short list and a count, not an echo of its input.
const maxWarnings = 10

// maxWarnedName bounds how much of an unknown name is echoed.
const maxWarnedName = 64

// argNames are the argument names a tool reads at one level of its
// arguments. Objects with declared properties (handle, options, the items
// of requirements) are checked too; free-form objects (request, plan,
// bundle, inputs) are not, since their keys belong to Vault or the bundle.
type argNames struct {
	// closed: every key not in names is unknown (the top level, and
	// objects with declared properties).
	closed bool
	names  []string
	nested map[string]*argNames // by property name
	items  *argNames            // for an array of objects
}

// knownArguments describes a tool's argument schema s: its top level is
// closed even without properties (a tool without arguments).
func knownArguments(s *jsonschema.Schema) *argNames {
	k := namesOf(s)
	if k == nil {
		k = &argNames{}
	}
	k.closed = true
	return k
}

// namesOf describes s; nil when s is free-form.
func namesOf(s *jsonschema.Schema) *argNames {
	if s == nil {
		return nil
	}
	props, items := shape(s)
	k := &argNames{items: namesOf(items)}
	if len(props) == 0 {
		if k.items == nil {
			return nil
		}
		return k
	}
	k.closed = true
	k.names = slices.Sorted(maps.Keys(props))
	for _, n := range k.names {
		if sub := namesOf(props[n]); sub != nil {
			if k.nested == nil {
				k.nested = map[string]*argNames{}
			}
			k.nested[n] = sub
		}
	}
	return k
}

// unknownArguments lists a warning for every argument of args k does not
// know, depth first in name order, at most maxWarnings of them.
func unknownArguments(k *argNames, args map[string]any) []string {
	var found []string
	total := 0
	k.walk(args, "", func(path, name string, known []string) {
		total++
		if len(found) < maxWarnings {
			found = append(found, unknownWarning(path, name, known))
		}
	})
	if total > maxWarnings {
		found = append(found, fmt.Sprintf("%d more unknown arguments not listed", total-maxWarnings))
	}
	return found
}

func (k *argNames) walk(v any, path string, report func(path, name string, known []string)) {
	if k == nil {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		if !k.closed {
			return
		}
		for _, name := range slices.Sorted(maps.Keys(x)) {
			if _, ok := slices.BinarySearch(k.names, name); !ok {
				report(path, name, k.names)
				continue
			}
			k.nested[name].walk(x[name], child(path, name), report)
		}
	case []any:
		for i, item := range x {
			k.items.walk(item, fmt.Sprintf("%s[%d]", path, i), report)
		}
	}
}

// unknownWarning is `unknown argument "limt"; did you mean "limit"?`, or
// lists the known names when none is close.
func unknownWarning(path, name string, known []string) string {
	shown := name
	if len(shown) > maxWarnedName {
		shown = shown[:maxWarnedName] + "..."
	}
	if best := suggest.Closest(name, known); best != "" {
		return fmt.Sprintf("unknown argument %q; did you mean %q?", child(path, shown), child(path, best))
	}
	if len(known) == 0 {
		return fmt.Sprintf("unknown argument %q is ignored; this tool takes no arguments", child(path, shown))
	}
	return fmt.Sprintf("unknown argument %q is ignored; known here: %s", child(path, shown), strings.Join(known, ", "))
}
