package tools

import (
	"fmt"
	"sort"
)

// Registry is the ordered, immutable set of tools a server exposes.
type Registry struct {
	tools  []Tool
	byName map[string]int
}

// NewRegistry builds a registry sorted by name; duplicate names or tools
// without a handler, schema, toolset or capability are programming errors.
func NewRegistry(groups ...[]Tool) (*Registry, error) {
	r := &Registry{byName: map[string]int{}}
	for _, g := range groups {
		for _, t := range g {
			if t.Name == "" || t.Handle == nil || t.InputSchema == nil || t.Toolset == "" || t.Capability == "" || t.Description == "" {
				return nil, fmt.Errorf("tool %q is incomplete (name, description, schema, handler, toolset and capability are required)", t.Name)
			}
			if _, dup := r.byName[t.Name]; dup {
				return nil, fmt.Errorf("tool %q registered twice", t.Name)
			}
			r.byName[t.Name] = len(r.tools)
			r.tools = append(r.tools, t)
		}
	}
	sort.Slice(r.tools, func(i, j int) bool { return r.tools[i].Name < r.tools[j].Name })
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
