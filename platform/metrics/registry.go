// Package metrics holds the Prometheus series accords-mcp exports, behind
// small typed wrappers that tests can read without a scrape.
package metrics

import (
	"fmt"
	"io"
	"net/http"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// ContentType is the Prometheus text exposition content type served to a
// scraper that asks for nothing else.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Registry is a Prometheus registry. Registering a name twice panics, as
// it did before the client library: it is a programming error.
type Registry struct {
	reg *prometheus.Registry
}

// NewRegistry returns an empty registry (no runtime collectors).
func NewRegistry() *Registry { return &Registry{reg: prometheus.NewRegistry()} }

// WithRuntime adds the Go runtime (go_*) and process (process_*)
// collectors.
func (r *Registry) WithRuntime() *Registry {
	r.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Gatherer is the registry for promhttp and tests.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// WriteText writes every family in the text exposition format, sorted by
// name.
func (r *Registry) WriteText(w io.Writer) error {
	mfs, err := r.reg.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}

// Handler serves the registry for GET and HEAD with the client library's
// content negotiation.
func (r *Registry) Handler() http.Handler {
	prom := promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		if req.Method == http.MethodHead {
			w.Header().Set("Content-Type", ContentType)
			return
		}
		prom.ServeHTTP(w, req)
	})
}

func checkLabels(name string, want int, got []string) {
	if len(got) != want {
		panic(fmt.Sprintf("metrics: %s wants %d label values, got %d", name, want, len(got)))
	}
}

// find returns c's sample with labels names=values, or nil, never creating
// a series.
func find(c prometheus.Collector, names, values []string) *dto.Metric {
	ch := make(chan prometheus.Metric, 16)
	go func() { c.Collect(ch); close(ch) }()
	var found *dto.Metric
	for m := range ch {
		var out dto.Metric
		if found != nil || m.Write(&out) != nil {
			continue
		}
		if sameLabels(out.GetLabel(), names, values) {
			found = &out
		}
	}
	return found
}

func sameLabels(pairs []*dto.LabelPair, names, values []string) bool {
	if len(pairs) != len(names) {
		return false
	}
	want := make(map[string]string, len(names))
	for i, n := range names {
		want[n] = values[i]
	}
	for _, p := range pairs {
		if v, ok := want[p.GetName()]; !ok || v != p.GetValue() {
			return false
		}
	}
	return true
}

// CounterVec is a counter with labels.
type CounterVec struct {
	name   string
	labels []string
	vec    *prometheus.CounterVec
}

// NewCounterVec registers a counter.
func (r *Registry) NewCounterVec(name, help string, labels ...string) *CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	r.reg.MustRegister(v)
	return &CounterVec{name: name, labels: labels, vec: v}
}

// Add adds v to the series with these label values; a negative v is
// ignored (counters never go down).
func (c *CounterVec) Add(v float64, values ...string) {
	checkLabels(c.name, len(c.labels), values)
	if v < 0 {
		return
	}
	c.vec.WithLabelValues(values...).Add(v)
}

// Inc adds one.
func (c *CounterVec) Inc(values ...string) { c.Add(1, values...) }

// Value returns the current value of one series (tests, doctor).
func (c *CounterVec) Value(values ...string) float64 {
	checkLabels(c.name, len(c.labels), values)
	if s := find(c.vec, c.labels, values); s != nil && s.Counter != nil {
		return s.Counter.GetValue()
	}
	return 0
}

// HistogramVec is a histogram with labels and fixed upper bounds.
type HistogramVec struct {
	name   string
	labels []string
	vec    *prometheus.HistogramVec
}

// DurationBuckets are upper bounds in seconds from 1 ms to 60 s.
var DurationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// NewHistogramVec registers a histogram; bounds must be increasing.
func (r *Registry) NewHistogramVec(name, help string, bounds []float64, labels ...string) *HistogramVec {
	if !sort.Float64sAreSorted(bounds) {
		panic("metrics: histogram bounds must be sorted")
	}
	v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: bounds}, labels)
	r.reg.MustRegister(v)
	return &HistogramVec{name: name, labels: labels, vec: v}
}

// Observe records v in the series with these label values.
func (h *HistogramVec) Observe(v float64, values ...string) {
	checkLabels(h.name, len(h.labels), values)
	h.vec.WithLabelValues(values...).Observe(v)
}

// Count returns the number of observations of one series.
func (h *HistogramVec) Count(values ...string) uint64 {
	checkLabels(h.name, len(h.labels), values)
	if s := find(h.vec, h.labels, values); s != nil && s.Histogram != nil {
		return s.Histogram.GetSampleCount()
	}
	return 0
}

// gaugeFunc is a gauge computed at scrape time; false omits the sample.
type gaugeFunc struct {
	desc *prometheus.Desc
	fn   func() (float64, bool)
}

func (g *gaugeFunc) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *gaugeFunc) Collect(ch chan<- prometheus.Metric) {
	if v, ok := g.fn(); ok {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v)
	}
}

// NewGaugeFunc registers a gauge read from fn at each scrape.
func (r *Registry) NewGaugeFunc(name, help string, fn func() (float64, bool)) {
	r.reg.MustRegister(&gaugeFunc{desc: prometheus.NewDesc(name, help, nil, nil), fn: fn})
}

// NewCounterFunc registers a counter read from fn at each scrape (a count
// kept elsewhere that only grows).
func (r *Registry) NewCounterFunc(name, help string, fn func() float64) {
	r.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, fn))
}

// GaugeVec is a settable gauge with labels (build info).
type GaugeVec struct {
	name   string
	labels int
	vec    *prometheus.GaugeVec
}

// NewGaugeVec registers a settable gauge.
func (r *Registry) NewGaugeVec(name, help string, labels ...string) *GaugeVec {
	v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	r.reg.MustRegister(v)
	return &GaugeVec{name: name, labels: len(labels), vec: v}
}

// Set sets the series with these label values.
func (g *GaugeVec) Set(v float64, values ...string) {
	checkLabels(g.name, g.labels, values)
	g.vec.WithLabelValues(values...).Set(v)
}
