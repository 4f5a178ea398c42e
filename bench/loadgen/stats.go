package loadgen

import (
	"maps"
	"slices"
	"sync"
	"time"
)

// Recorder collects the latency and outcome of every call of one operation.
// Errors are counted by envelope error code (or "transport" for a failed
// MCP exchange) so a report shows what failed, not only how often.
type Recorder struct {
	mu     sync.Mutex
	lat    []time.Duration
	wire   []time.Duration
	errors map[string]int
	start  time.Time
	end    time.Time
}

// NewRecorder starts the wall clock of an operation.
func NewRecorder() *Recorder {
	return &Recorder{errors: map[string]int{}, start: time.Now()}
}

// Add records one call; code is "" for success.
func (r *Recorder) Add(d time.Duration, code string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lat = append(r.lat, d)
	if code != "" {
		r.errors[code]++
	}
}

// AddWire records one call's wire time (see wireTransport); zero is
// ignored (an untimed session).
func (r *Recorder) AddWire(d time.Duration) {
	if d <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wire = append(r.wire, d)
}

// Stop ends the wall clock.
func (r *Recorder) Stop() {
	r.mu.Lock()
	r.end = time.Now()
	r.mu.Unlock()
}

// OpResult is the summary of one operation.
type OpResult struct {
	Op          string         `json:"op"`
	Transport   string         `json:"transport"`
	Bundles     int            `json:"bundles"`
	Concurrency int            `json:"concurrency"`
	Skipped     string         `json:"skipped,omitempty"`
	Calls       int            `json:"calls"`
	Errors      map[string]int `json:"errors,omitempty"`
	P50MS       float64        `json:"p50_ms"`
	P95MS       float64        `json:"p95_ms"`
	P99MS       float64        `json:"p99_ms"`
	MeanMS      float64        `json:"mean_ms"`
	MaxMS       float64        `json:"max_ms"`
	// WireP50MS and WireP99MS time the same calls on the wire: from the
	// request leaving the client to its response arriving, without the
	// client's decoding of the result.
	WireP50MS float64 `json:"wire_p50_ms,omitempty"`
	WireP99MS float64 `json:"wire_p99_ms,omitempty"`
	// RawP50MS and RawP99MS time the operation through RawClient in a
	// second pass (side-by-side runs): the server's own answer time.
	RawP50MS  float64 `json:"raw_p50_ms,omitempty"`
	RawP99MS  float64 `json:"raw_p99_ms,omitempty"`
	RawCalls  int     `json:"raw_calls,omitempty"`
	RawErrors int     `json:"raw_errors,omitempty"`
	// RawPerSecond is the bare client's throughput (HTTP runs).
	RawPerSecond float64 `json:"raw_ops_per_s,omitempty"`
	// ServerCPUUS and RawServerCPUUS are the server process's CPU time
	// per call, in microseconds, over the run and over the bare client's
	// pass: on a shared machine a steadier measure of the server's cost
	// than its throughput.
	ServerCPUUS    float64 `json:"server_cpu_us_per_call,omitempty"`
	RawServerCPUUS float64 `json:"raw_server_cpu_us_per_call,omitempty"`
	WallS          float64 `json:"wall_s"`
	PerSecond      float64 `json:"ops_per_s"`
	Note           string  `json:"note,omitempty"`
}

// SetRaw records raw, the same operation's summary through a bare client,
// as r's raw figures.
func (r *OpResult) SetRaw(raw OpResult) {
	r.RawP50MS, r.RawP99MS, r.RawCalls, r.RawErrors, r.RawPerSecond = raw.P50MS, raw.P99MS, raw.Calls, errTotal(raw.Errors), raw.PerSecond
	r.RawServerCPUUS = raw.ServerCPUUS
}

// PerCallUS is cpu spread over calls, in microseconds (0 without calls).
func PerCallUS(cpu time.Duration, calls int) float64 {
	if calls <= 0 || cpu <= 0 {
		return 0
	}
	return float64(cpu.Microseconds()) / float64(calls)
}

// Summary computes percentiles (nearest rank) and throughput.
func (r *Recorder) Summary(op, transport string, bundles, conc int) OpResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	end := r.end
	if end.IsZero() {
		end = time.Now()
	}
	res := OpResult{Op: op, Transport: transport, Bundles: bundles, Concurrency: conc, Calls: len(r.lat)}
	if len(r.errors) > 0 {
		res.Errors = map[string]int{}
		maps.Copy(res.Errors, r.errors)
	}
	wall := end.Sub(r.start)
	res.WallS = wall.Seconds()
	if len(r.lat) == 0 {
		return res
	}
	sorted := append([]time.Duration(nil), r.lat...)
	slices.Sort(sorted)
	var sum time.Duration
	for _, d := range sorted {
		sum += d
	}
	res.P50MS = ms(Percentile(sorted, 50))
	res.P95MS = ms(Percentile(sorted, 95))
	res.P99MS = ms(Percentile(sorted, 99))
	res.MaxMS = ms(sorted[len(sorted)-1])
	res.MeanMS = ms(sum / time.Duration(len(sorted)))
	if wall > 0 {
		res.PerSecond = float64(len(sorted)) / wall.Seconds()
	}
	if len(r.wire) > 0 {
		w := append([]time.Duration(nil), r.wire...)
		slices.Sort(w)
		res.WireP50MS, res.WireP99MS = ms(Percentile(w, 50)), ms(Percentile(w, 99))
	}
	return res
}

// Percentile returns the nearest-rank percentile p (0 < p <= 100) of sorted
// durations; zero for an empty slice.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := min(max(int(p/100*float64(len(sorted))+0.999999999), 1), len(sorted))
	return sorted[rank-1]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
