package tools

import (
	"cmp"
	"fmt"
	"slices"
)

// Registry is the ordered, immutable set of bound tools a server exposes.
type Registry struct {
	tools  []Tool
	byName map[string]int
}

// newRegistry sorts tools by name; duplicate names or incomplete
// definitions are programming errors.
func newRegistry(tools []Tool) (*Registry, error) {
	r := &Registry{tools: slices.Clone(tools), byName: make(map[string]int, len(tools))}
	for _, t := range r.tools {
		if err := checkDefinition(t); err != nil {
			return nil, err
		}
		if _, dup := r.byName[t.Name]; dup {
			return nil, fmt.Errorf("tool %q registered twice", t.Name)
		}
		r.byName[t.Name] = 0
	}
	slices.SortFunc(r.tools, func(a, b Tool) int { return cmp.Compare(a.Name, b.Name) })
	for i, t := range r.tools {
		r.byName[t.Name] = i
	}
	return r, nil
}

// Tools returns the tools sorted by name.
func (r *Registry) Tools() []Tool { return r.tools }

// Lookup finds a tool by name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	i, ok := r.byName[name]
	if !ok {
		return Tool{}, false
	}
	return r.tools[i], true
}

// Filter returns a registry holding the tools keep accepts.
func (r *Registry) Filter(keep func(Tool) bool) *Registry {
	out := &Registry{byName: map[string]int{}}
	for _, t := range r.tools {
		if keep(t) {
			out.byName[t.Name] = len(out.tools)
			out.tools = append(out.tools, t)
		}
	}
	return out
}
