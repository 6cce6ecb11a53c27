// Package report turns benchmark results into the files a reader looks at:
// a markdown summary with the targets checked, the raw numbers as JSON, and a
// bar chart as SVG.
package report

import (
	"encoding/json"
	"io"
	"time"

	"github.com/redlock-go/redlock/bench/internal/runner"
)

// Report is everything one benchmark run produced.
type Report struct {
	Meta      Meta      `json:"meta"`
	Libraries []Library `json:"libraries"`
	Cases     []Case    `json:"cases"`
	Rows      []Row     `json:"results"`
}

// Meta describes the run and the machine.
type Meta struct {
	Date          time.Time `json:"date"`
	Command       string    `json:"command"`
	Commit        string    `json:"commit,omitempty"`
	GoVersion     string    `json:"go_version"`
	Platform      string    `json:"platform"`
	GOMAXPROCS    int       `json:"gomaxprocs"`
	CPUModel      string    `json:"cpu_model,omitempty"`
	RedisVersion  string    `json:"redis_version"`
	RoundTripUs   float64   `json:"round_trip_us"` // median PING round trip to one node, at the start
	DurationSec   float64   `json:"duration_s"`    // measured window per run
	WarmupSec     float64   `json:"warmup_s"`
	Rounds        int       `json:"rounds"` // the measured time is split in rounds taking the libraries in turn
	SlowLatencyMs float64   `json:"slow_latency_ms"`
	// MarkedReady says the library's restart quarantine was lifted on the
	// new nodes before the first case.
	MarkedReady bool `json:"marked_ready"`
}

// Library is one measured library and its configuration.
type Library struct {
	Name string `json:"name"`
	Ours bool   `json:"ours"`
	// Baseline marks the reference that is not a lock: the least Redis
	// work of a cycle, as fast as one client sends it.
	Baseline bool   `json:"baseline,omitempty"`
	Settings string `json:"settings"`
}

// Case is one workload on one node topology.
type Case struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Short     string `json:"short"` // chart label
	Workers   int    `json:"workers"`
	Nodes     int    `json:"nodes"`
	SlowNodes int    `json:"slow_nodes"`
	Handoffs  bool   `json:"handoffs"` // one shared key: rate is handoffs/s, latency is the wait
	// RoundTripUs is the median PING round trip to one node, sampled before
	// each round of this case: the floor of a request under the load the
	// machine had then.
	RoundTripUs float64 `json:"round_trip_us"`
}

// Row is one library's result in one case.
type Row struct {
	Case    string `json:"case"`
	Library string `json:"library"`
	// NA says why the library was not run in this case; the numbers are
	// then zero.
	NA string `json:"na,omitempty"`

	Rate                float64 `json:"rate"` // cycles (or handoffs) per second
	P50Us               float64 `json:"p50_us"`
	P90Us               float64 `json:"p90_us"`
	P99Us               float64 `json:"p99_us"`
	MaxUs               float64 `json:"max_us"`
	AllocsPerCycle      float64 `json:"allocs_per_cycle"`
	BytesPerCycle       float64 `json:"bytes_per_cycle"`
	CPUUsPerCycle       float64 `json:"cpu_us_per_cycle"`
	ServerCPUUsPerCycle float64 `json:"server_cpu_us_per_cycle"`
	// NewConnsPer1kCycles is how many connections the servers accepted per
	// thousand cycles: a client that drops and redials connections shows here.
	NewConnsPer1kCycles float64 `json:"new_conns_per_1k_cycles"`
	Cycles              int64   `json:"cycles"`
	Errors              int64   `json:"errors"`
	LastError           string  `json:"last_error,omitempty"`
	Seconds             float64 `json:"seconds"`
	// ClientLogs counts the lines the client library logged during the run
	// (go-redis reports connection trouble this way); a few are quoted.
	ClientLogs       int      `json:"client_logs,omitempty"`
	ClientLogSamples []string `json:"client_log_samples,omitempty"`
}

// NewRow converts a runner result.
func NewRow(caseID, library string, r runner.Result) Row {
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	return Row{
		Case:                caseID,
		Library:             library,
		Rate:                r.Rate(),
		P50Us:               us(r.P50),
		P90Us:               us(r.P90),
		P99Us:               us(r.P99),
		MaxUs:               us(r.Max),
		AllocsPerCycle:      r.PerCycle(float64(r.Mallocs)),
		BytesPerCycle:       r.PerCycle(float64(r.AllocBytes)),
		CPUUsPerCycle:       r.PerCycle(us(r.CPU)),
		ServerCPUUsPerCycle: r.PerCycle(us(r.ServerCPU)),
		NewConnsPer1kCycles: r.PerCycle(1000 * float64(r.NewConns)),
		Cycles:              r.Cycles,
		Errors:              r.Errors,
		LastError:           r.LastErr,
		Seconds:             r.Elapsed.Seconds(),
	}
}

// Case returns the case with id.
func (r *Report) Case(id string) (Case, bool) {
	for _, c := range r.Cases {
		if c.ID == id {
			return c, true
		}
	}
	return Case{}, false
}

// Row returns the result of library in case, if it ran (it may have
// completed no cycle).
func (r *Report) Row(caseID, library string) (Row, bool) {
	for _, row := range r.Rows {
		if row.Case == caseID && row.Library == library && row.NA == "" {
			return row, true
		}
	}
	return Row{}, false
}

// WriteJSON writes the report and the targets checked as indented JSON.
func (r *Report) WriteJSON(w io.Writer, targets []Target) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		*Report
		Targets []Target `json:"targets"`
	}{r, targets})
}
