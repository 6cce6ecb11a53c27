// Package report turns benchmark results into the files a reader looks at:
// a markdown summary with the targets checked, the raw numbers as JSON, and a
// bar chart as SVG.
package report

import (
	"encoding/json"
	"io"
	"strings"
	"time"

	"github.com/redlock-go/redlock/bench/internal/nodes"
	"github.com/redlock-go/redlock/bench/internal/runner"
)

// Report is everything one benchmark run produced.
type Report struct {
	Meta      Meta      `json:"meta"`
	Libraries []Library `json:"libraries"`
	Cases     []Case    `json:"cases"`
	Rows      []Row     `json:"results"`
	// Series groups the cases of a growth run into curves; empty otherwise.
	Series []Series `json:"series,omitempty"`
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
	// ProxyOverheadUs is what the network cases' proxies were found to add
	// each way by themselves (waking their goroutines, sleeping late) when
	// they started, and took off the time they wait.
	ProxyOverheadUs float64 `json:"proxy_overhead_us,omitempty"`
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
	Baseline bool `json:"baseline,omitempty"`
	// Floor marks the fenced floor: the least Redis work of a fenced
	// lock, no peer.
	Floor bool `json:"floor,omitempty"`
	// Trade names the guarantee a configuration of this project's library
	// gives up for speed; such a row is neither judged nor a peer.
	Trade string `json:"trade,omitempty"`
	// TradeOf names the configuration with every guarantee on that a
	// Trade row departs from.
	TradeOf  string `json:"trade_of,omitempty"`
	Settings string `json:"settings"`
	// Semaphore and ReadWrite say how the library takes a permit of a
	// semaphore and a read-write lock: natively, or by the nearest
	// substitute it offers.
	Semaphore string `json:"semaphore,omitempty"`
	ReadWrite string `json:"read_write,omitempty"`
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
	// Clients is how many separate clients the goroutines use, one each
	// (their own connections, and their own Client values where the
	// library has them), as separate processes would; 0 means one client
	// shared by all the goroutines.
	Clients int `json:"clients,omitempty"`
	// DelayUs is the delay a proxy in front of every node adds each way,
	// in microseconds: a network rather than loopback.
	DelayUs float64 `json:"delay_us,omitempty"`
	// MeasuredDelayUs is the delay the proxies really added each way,
	// sampled before each round: half the difference of the median PING
	// round trips through the first node's proxy and around it.
	MeasuredDelayUs float64 `json:"measured_delay_us,omitempty"`
	// AcquireTimeoutS is the deadline of each acquisition, in seconds, if
	// it has one of its own.
	AcquireTimeoutS float64 `json:"acquire_timeout_s,omitempty"`
	// Limit is the permits of the semaphore of which every cycle takes
	// one; 0 outside the semaphore cases.
	Limit int `json:"limit,omitempty"`
	// WriteEvery says that one cycle in WriteEvery of every goroutine takes
	// the read-write lock as a writer, the others as readers; 0 outside the
	// read-write cases.
	WriteEvery int `json:"write_every,omitempty"`
	// Try says that every cycle takes the lock by one attempt at a time,
	// with a short pause after each refusal, instead of the library's
	// blocking acquire.
	Try bool `json:"try,omitempty"`
	// RoundTripUs is the median PING round trip to one node, sampled before
	// each round of this case: the floor of a request under the load the
	// machine had then.
	RoundTripUs float64 `json:"round_trip_us"`
}

// Mutex says whether every cycle of c takes a plain lock, which every
// library has, rather than a semaphore's permit or a read-write lock, for
// which the peers run substitutes.
func (c Case) Mutex() bool { return c.Limit == 0 && c.WriteEvery == 0 }

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
	// CommandsPerCycle is how many times the servers ran each command per
	// cycle (INFO commandstats), those run inside scripts and functions
	// included, by lower-case name.
	CommandsPerCycle map[string]float64 `json:"commands_per_cycle,omitempty"`
	// CommandUsPerCycle is the microseconds the servers spent per cycle
	// running each command (INFO commandstats usec): a script's or
	// function's own time includes the commands it ran.
	CommandUsPerCycle map[string]float64 `json:"command_us_per_cycle,omitempty"`
	Cycles            int64              `json:"cycles"`
	Errors            int64              `json:"errors"`
	// Timeouts counts the acquisitions begun in the window that reached
	// their deadline (Case.AcquireTimeoutS).
	Timeouts int64 `json:"timeouts,omitempty"`
	// AgainShare is, in a case of one shared plain lock, the part of the
	// grants that went to the goroutine (in the crowd cases, the client)
	// that held the lock just before.
	AgainShare float64 `json:"again_share,omitempty"`
	LastError  string  `json:"last_error,omitempty"`
	Seconds    float64 `json:"seconds"`
	// FloorUs is, over a network (Case.DelayUs), the least a cycle of two
	// round trips can take (see Case.Floor).
	FloorUs float64 `json:"floor_us,omitempty"`
	// ClientLogs counts the lines the client library logged during the run
	// (go-redis reports connection trouble this way); a few are quoted.
	ClientLogs       int      `json:"client_logs,omitempty"`
	ClientLogSamples []string `json:"client_log_samples,omitempty"`
	// Readers and Writers are each kind's part of the cycles of a
	// read-write case (Case.WriteEvery); the latency above is of both.
	Readers *Grants `json:"readers,omitempty"`
	Writers *Grants `json:"writers,omitempty"`
}

// Grants is one kind's part of the cycles of a read-write case: readers'
// or writers'. Latency is the wait in acquire.
type Grants struct {
	Rate   float64 `json:"rate"` // per second
	P50Us  float64 `json:"p50_us"`
	P99Us  float64 `json:"p99_us"`
	MaxUs  float64 `json:"max_us"`
	Cycles int64   `json:"cycles"`
}

// newGrants converts a runner's grants of one kind over elapsed.
func newGrants(g runner.Grants, elapsed time.Duration) *Grants {
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	out := &Grants{P50Us: us(g.P50), P99Us: us(g.P99), MaxUs: us(g.Max), Cycles: g.Cycles}
	if elapsed > 0 {
		out.Rate = float64(g.Cycles) / elapsed.Seconds()
	}
	return out
}

// NewRow converts a runner result.
func NewRow(caseID, library string, r runner.Result) Row {
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	row := Row{
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
		Timeouts:            r.Timeouts,
		AgainShare:          r.PerCycle(float64(r.Again)),
		LastError:           r.LastErr,
		Seconds:             r.Elapsed.Seconds(),
	}
	row.CommandsPerCycle, row.CommandUsPerCycle = commandsPerCycle(r)
	if r.Readers.Cycles+r.Writers.Cycles > 0 {
		row.Readers, row.Writers = newGrants(r.Readers, r.Elapsed), newGrants(r.Writers, r.Elapsed)
	}
	return row
}

// Floor returns the least a cycle of row's library can take in c over a
// network, in microseconds: two round trips (acquire, release) of the
// delay each way, as measured (as set if it was not), plus the time the
// servers spent per cycle on one node (their CPU per cycle over the node
// count; the nodes work in parallel). It is 0 on loopback.
func (c Case) Floor(row Row) float64 {
	if c.DelayUs == 0 {
		return 0
	}
	delay := c.DelayUs
	if c.MeasuredDelayUs > 0 {
		delay = c.MeasuredDelayUs
	}
	return 4*delay + row.ServerCPUUsPerCycle/float64(max(c.Nodes, 1))
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

// commandsPerCycle splits r's command counts into calls and microseconds
// per cycle (see nodes.UsecPrefix); nil when they were not counted.
func commandsPerCycle(r runner.Result) (calls, usec map[string]float64) {
	for name, n := range r.Commands {
		if calls == nil {
			calls, usec = map[string]float64{}, map[string]float64{}
		}
		if cmd, ok := strings.CutPrefix(name, nodes.UsecPrefix); ok {
			usec[cmd] = r.PerCycle(float64(n))
		} else {
			calls[name] = r.PerCycle(float64(n))
		}
	}
	return calls, usec
}
