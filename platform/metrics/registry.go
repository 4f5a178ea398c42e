// Package metrics is a small Prometheus text-format registry (exposition
// format 0.0.4) written by hand to avoid a client-library dependency, plus
// the series accords-mcp exports: tool calls, Vault requests and gauges read
// at scrape time.
package metrics

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// ContentType is the Prometheus text exposition content type.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// family is one metric name with its HELP/TYPE header.
type family interface {
	name() string
	write(w *bufio.Writer)
}

// Registry holds metric families and renders them sorted by name.
type Registry struct {
	mu       sync.Mutex
	families map[string]family
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{families: map[string]family{}} }

func (r *Registry) add(f family) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.families[f.name()]; dup {
		panic("metrics: duplicate metric " + f.name())
	}
	r.families[f.name()] = f
}

// WriteText writes every family in the text exposition format.
func (r *Registry) WriteText(w io.Writer) error {
	r.mu.Lock()
	fams := make([]family, 0, len(r.families))
	for _, f := range r.families {
		fams = append(fams, f)
	}
	r.mu.Unlock()
	sort.Slice(fams, func(i, j int) bool { return fams[i].name() < fams[j].name() })
	bw := bufio.NewWriter(w)
	for _, f := range fams {
		f.write(bw)
	}
	return bw.Flush()
}

// Handler serves the registry for GET and HEAD.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", ContentType)
		w.Header().Set("Cache-Control", "no-store")
		if req.Method == http.MethodHead {
			return
		}
		_ = r.WriteText(w)
	})
}

func header(w *bufio.Writer, name, help, typ string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, escapeHelp(help), name, typ)
}

// Built once: a Replacer builds its lookup table on first use.
var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string { return helpEscaper.Replace(s) }

func escapeLabel(s string) string { return labelEscaper.Replace(s) }

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// labelString renders {a="x",b="y"}; extra is appended last (le for buckets).
func labelString(names, values []string, extraName, extraValue string) string {
	if len(names) == 0 && extraName == "" {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `%s="%s"`, n, escapeLabel(values[i]))
	}
	if extraName != "" {
		if len(names) > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `%s="%s"`, extraName, escapeLabel(extraValue))
	}
	b.WriteByte('}')
	return b.String()
}

// key joins label values with a separator that cannot occur in UTF-8 text.
func key(values []string) string { return strings.Join(values, "\xff") }

// series is the sorted list of label-value tuples of a vector.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func splitKey(k string, n int) []string {
	if n == 0 {
		return nil
	}
	return strings.SplitN(k, "\xff", n)
}

// CounterVec is a counter with labels.
type CounterVec struct {
	n, help string
	labels  []string
	mu      sync.Mutex
	vals    map[string]float64
}

// NewCounterVec registers a counter.
func (r *Registry) NewCounterVec(name, help string, labels ...string) *CounterVec {
	c := &CounterVec{n: name, help: help, labels: labels, vals: map[string]float64{}}
	r.add(c)
	return c
}

func (c *CounterVec) name() string { return c.n }

// Add adds v (which must be >= 0) to the series with these label values.
func (c *CounterVec) Add(v float64, values ...string) {
	if len(values) != len(c.labels) {
		panic(fmt.Sprintf("metrics: %s wants %d label values, got %d", c.n, len(c.labels), len(values)))
	}
	if v < 0 {
		return
	}
	c.mu.Lock()
	c.vals[key(values)] += v
	c.mu.Unlock()
}

// Inc adds one.
func (c *CounterVec) Inc(values ...string) { c.Add(1, values...) }

// Value returns the current value of one series (tests, doctor).
func (c *CounterVec) Value(values ...string) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.vals[key(values)]
}

func (c *CounterVec) write(w *bufio.Writer) {
	header(w, c.n, c.help, "counter")
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range sortedKeys(c.vals) {
		fmt.Fprintf(w, "%s%s %s\n", c.n, labelString(c.labels, splitKey(k, len(c.labels)), "", ""), formatFloat(c.vals[k]))
	}
}

// HistogramVec is a histogram with labels and fixed upper bounds.
type HistogramVec struct {
	n, help string
	labels  []string
	bounds  []float64
	mu      sync.Mutex
	vals    map[string]*histo
}

type histo struct {
	counts []uint64 // per bucket, not cumulative
	count  uint64
	sum    float64
}

// DurationBuckets are upper bounds in seconds from 1 ms to 60 s.
var DurationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// NewHistogramVec registers a histogram; bounds must be increasing.
func (r *Registry) NewHistogramVec(name, help string, bounds []float64, labels ...string) *HistogramVec {
	if !sort.Float64sAreSorted(bounds) {
		panic("metrics: histogram bounds must be sorted")
	}
	h := &HistogramVec{n: name, help: help, labels: labels, bounds: bounds, vals: map[string]*histo{}}
	r.add(h)
	return h
}

func (h *HistogramVec) name() string { return h.n }

// Observe records v in the series with these label values.
func (h *HistogramVec) Observe(v float64, values ...string) {
	if len(values) != len(h.labels) {
		panic(fmt.Sprintf("metrics: %s wants %d label values, got %d", h.n, len(h.labels), len(values)))
	}
	i := sort.SearchFloat64s(h.bounds, v) // first bound >= v
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.vals[key(values)]
	if s == nil {
		s = &histo{counts: make([]uint64, len(h.bounds)+1)}
		h.vals[key(values)] = s
	}
	s.counts[i]++
	s.count++
	s.sum += v
}

// Count returns the number of observations of one series.
func (h *HistogramVec) Count(values ...string) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.vals[key(values)]; s != nil {
		return s.count
	}
	return 0
}

func (h *HistogramVec) write(w *bufio.Writer) {
	header(w, h.n, h.help, "histogram")
	h.mu.Lock()
	defer h.mu.Unlock()
	bounds := make([]string, len(h.bounds))
	for i, b := range h.bounds {
		bounds[i] = formatFloat(b)
	}
	for _, k := range sortedKeys(h.vals) {
		s := h.vals[k]
		labels := labelString(h.labels, splitKey(k, len(h.labels)), "", "")
		// The series labels are rendered once; le is spliced in per bucket.
		prefix := "{"
		if labels != "" {
			prefix = labels[:len(labels)-1] + ","
		}
		var cum uint64
		for i, b := range bounds {
			cum += s.counts[i]
			_, _ = w.WriteString(h.n + "_bucket" + prefix + `le="` + b + `"} ` + strconv.FormatUint(cum, 10) + "\n")
		}
		_, _ = w.WriteString(h.n + "_bucket" + prefix + `le="+Inf"} ` + strconv.FormatUint(s.count, 10) + "\n")
		_, _ = w.WriteString(h.n + "_sum" + labels + " " + formatFloat(s.sum) + "\n")
		_, _ = w.WriteString(h.n + "_count" + labels + " " + strconv.FormatUint(s.count, 10) + "\n")
	}
}

// GaugeFunc is a gauge computed at scrape time. A function reporting false
// omits the sample (the value is unknown, e.g. the index is not open).
type GaugeFunc struct {
	n, help string
	fn      func() (float64, bool)
}

// NewGaugeFunc registers a gauge read from fn at each scrape.
func (r *Registry) NewGaugeFunc(name, help string, fn func() (float64, bool)) *GaugeFunc {
	g := &GaugeFunc{n: name, help: help, fn: fn}
	r.add(g)
	return g
}

func (g *GaugeFunc) name() string { return g.n }

func (g *GaugeFunc) write(w *bufio.Writer) {
	v, ok := g.fn()
	if !ok {
		return
	}
	header(w, g.n, g.help, "gauge")
	fmt.Fprintf(w, "%s %s\n", g.n, formatFloat(v))
}

// GaugeVec is a settable gauge with labels (build info).
type GaugeVec struct {
	n, help string
	labels  []string
	mu      sync.Mutex
	vals    map[string]float64
}

// NewGaugeVec registers a settable gauge.
func (r *Registry) NewGaugeVec(name, help string, labels ...string) *GaugeVec {
	g := &GaugeVec{n: name, help: help, labels: labels, vals: map[string]float64{}}
	r.add(g)
	return g
}

func (g *GaugeVec) name() string { return g.n }

// Set sets the series with these label values.
func (g *GaugeVec) Set(v float64, values ...string) {
	if len(values) != len(g.labels) {
		panic(fmt.Sprintf("metrics: %s wants %d label values, got %d", g.n, len(g.labels), len(values)))
	}
	g.mu.Lock()
	g.vals[key(values)] = v
	g.mu.Unlock()
}

func (g *GaugeVec) write(w *bufio.Writer) {
	header(w, g.n, g.help, "gauge")
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, k := range sortedKeys(g.vals) {
		fmt.Fprintf(w, "%s%s %s\n", g.n, labelString(g.labels, splitKey(k, len(g.labels)), "", ""), formatFloat(g.vals[k]))
	}
}
