package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/redlock-go/redlock/bench/internal/drivers"
	"github.com/redlock-go/redlock/bench/internal/nodes"
	"github.com/redlock-go/redlock/bench/internal/report"
	"github.com/redlock-go/redlock/bench/internal/runner"
	"github.com/redlock-go/redlock/bench/internal/slowproxy"
)

// Workload sizes from the benchmark's specification.
const (
	maxNodes        = 5
	parallelWorkers = 64
	sharedWorkers   = 8
	// roundTripPings is how many PINGs measure the loopback round trip at
	// the start; roundTripSample how many are sent before each round.
	roundTripPings  = 2000
	roundTripSample = 200
	// setupTimeout bounds starting the nodes and opening one library.
	setupTimeout = 30 * time.Second
	// laterWarmupDivisor shortens the warm-up of every round after the
	// first: connections are already open, only the goroutines restart.
	laterWarmupDivisor = 5
)

// benchCase is a workload on a node topology.
type benchCase struct {
	report.Case
	keys runner.Keys
}

// cases lists every case, grouped by workload so that the chart reads left
// to right: one goroutine, many goroutines, one shared key.
func cases() []benchCase {
	type workload struct {
		id, title, short string
		workers          int
		keys             runner.Keys
	}
	workloads := []workload{
		{"serial", "1 goroutine, new key per cycle", "1 goroutine", 1, runner.NewKeyEachCycle},
		{"parallel", "64 goroutines, distinct keys", "64 goroutines", parallelWorkers, runner.KeyPerWorker},
		{"shared", "8 goroutines, one shared key", "8 on one key", sharedWorkers, runner.SharedKey},
	}
	topologies := []struct {
		suffix, title, short string
		nodes, slow          int
	}{
		{"-1", "1 node", "1 node", 1, 0},
		{"-5", "5 nodes", "5 nodes", 5, 0},
		{"-5slow", "5 nodes, one slow", "5 nodes, 1 slow", 5, 1},
	}
	var cs []benchCase
	for _, w := range workloads {
		for _, t := range topologies {
			cs = append(cs, benchCase{
				Case: report.Case{
					ID: w.id + t.suffix, Title: w.title + ", " + t.title, Short: w.short + "\n" + t.short,
					Workers: w.workers, Nodes: t.nodes, SlowNodes: t.slow, Handoffs: w.keys == runner.SharedKey,
				},
				keys: w.keys,
			})
		}
	}
	return cs
}

func caseIDs() string {
	var ids []string
	for _, c := range cases() {
		ids = append(ids, c.ID)
	}
	return strings.Join(ids, ", ")
}

// runSuite starts the nodes, runs every selected case with every selected
// library, and returns the report.
func runSuite(ctx context.Context, cfg config, logs *clientLog, progress io.Writer) (*report.Report, error) {
	var selected []benchCase
	for _, c := range cases() {
		if cfg.cases.MatchString(c.ID) {
			selected = append(selected, c)
		}
	}
	var libs []drivers.Library
	for _, l := range drivers.All() {
		if cfg.libs.MatchString(l.Name) {
			libs = append(libs, l)
		}
	}
	if len(selected) == 0 || len(libs) == 0 {
		return nil, fmt.Errorf("no case or no library selected")
	}

	setupCtx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	servers, err := nodes.Start(setupCtx, cfg.server, maxNodes)
	if err != nil {
		return nil, err
	}
	defer servers.Close()
	addrs := servers.Addrs()
	rtt, err := nodes.RoundTrip(setupCtx, addrs[0], roundTripPings)
	if err != nil {
		return nil, err
	}
	quarantine, err := drivers.MarkReady(setupCtx, addrs)
	if err != nil {
		return nil, err
	}

	rep := &report.Report{Meta: meta(cfg, rtt)}
	rep.Meta.MarkedReady = quarantine
	for _, l := range libs {
		rep.Libraries = append(rep.Libraries, report.Library{Name: l.Name, Ours: l.Ours, Baseline: l.Baseline, Settings: l.Settings})
	}
	for _, c := range selected {
		rep.Cases = append(rep.Cases, c.Case)
	}

	// The slow node is the last one, reached through a proxy in a child
	// process, started only if a case needs it.
	var proxy *slowproxy.Proxy
	defer func() {
		if proxy != nil {
			proxy.Close()
		}
	}()
	slowAddrs := func() ([]string, error) {
		if proxy == nil {
			p, err := slowproxy.Start(ctx, addrs[maxNodes-1], cfg.slowLatency)
			if err != nil {
				return nil, err
			}
			proxy = p
		}
		return append(append([]string(nil), addrs[:maxNodes-1]...), proxy.Addr()), nil
	}

	type pending struct {
		c    benchCase
		libs []drivers.Library
	}
	var plan []pending
	segments := 0
	for _, c := range selected {
		p := pending{c: c}
		for _, l := range libs {
			if l.MaxNodes > 0 && c.Nodes > l.MaxNodes {
				rep.Rows = append(rep.Rows, report.Row{Case: c.ID, Library: l.Name, NA: fmt.Sprintf("locks on %d node only", l.MaxNodes)})
				continue
			}
			if l.Baseline && c.Handoffs {
				rep.Rows = append(rep.Rows, report.Row{Case: c.ID, Library: l.Name, NA: "not a lock: run only where keys are not contended"})
				continue
			}
			p.libs = append(p.libs, l)
		}
		plan = append(plan, p)
		segments += len(p.libs)
	}
	laterWarmup := cfg.warmup / laterWarmupDivisor
	perLib := cfg.warmup + time.Duration(cfg.rounds-1)*laterWarmup + cfg.duration
	bar := newBar(cfg, progress, int64(segments)*perLib.Milliseconds())
	done := time.Duration(0)

	seq := 0
	for _, p := range plan {
		runAddrs := addrs[:p.c.Nodes]
		if p.c.SlowNodes > 0 {
			if runAddrs, err = slowAddrs(); err != nil {
				return nil, err
			}
		}
		// Every library of the case gets fresh connections, then the
		// measured time is split in rounds that take the libraries in
		// turn, so that a burst of load from elsewhere on the machine
		// falls on all of them alike.
		entries := make([]*entry, len(p.libs))
		for i, l := range p.libs {
			entries[i] = openEntry(ctx, l, runAddrs, p.c.keys == runner.SharedKey)
		}
		var rtts []time.Duration
		for round := range cfg.rounds {
			for k := range entries {
				e := entries[(k+round)%len(entries)]
				warmup := cfg.warmup
				if round > 0 {
					warmup = laterWarmup
				}
				share := warmup + cfg.duration/time.Duration(cfg.rounds)
				if e.na != "" {
					done += share
					continue
				}
				if ctx.Err() != nil {
					closeEntries(entries)
					return nil, ctx.Err()
				}
				bar.Describe(fmt.Sprintf("%-15s %-16s round %d/%d", p.c.ID, e.l.Name, round+1, cfg.rounds))
				if t, err := nodes.RoundTrips(ctx, addrs[0], roundTripSample); err == nil {
					rtts = append(rtts, t...)
				}
				stopTicker := tick(bar, done.Milliseconds(), share)
				logs.take()
				res, err := runner.Run(ctx, e.d, runner.Case{Workers: p.c.Workers, Keys: p.c.keys}, runner.Options{
					Warmup:      warmup,
					Duration:    cfg.duration / time.Duration(cfg.rounds),
					KeyPrefix:   "bench:" + strconv.Itoa(seq) + ":",
					ServerCPU:   servers.CPU,
					Connections: servers.Connections,
				})
				seq++
				n, samples := logs.take()
				stopTicker()
				done += share
				bar.Set64(done.Milliseconds())
				if err != nil {
					e.na = "run failed: " + err.Error()
					continue
				}
				e.add(res, n, samples)
			}
		}
		closeEntries(entries)
		for _, e := range entries {
			rep.Rows = append(rep.Rows, e.row(p.c.ID))
		}
		for i := range rep.Cases {
			if rep.Cases[i].ID == p.c.ID {
				rep.Cases[i].RoundTripUs = float64(nodes.Median(rtts)) / float64(time.Microsecond)
			}
		}
	}
	bar.Finish()
	fmt.Fprintln(progress)
	sortRows(rep)
	return rep, nil
}

// sortRows orders the rows by case, then library, as the report lists them.
func sortRows(rep *report.Report) {
	order := map[string]int{}
	for i, c := range rep.Cases {
		order["c"+c.ID] = i
	}
	for i, l := range rep.Libraries {
		order["l"+l.Name] = i
	}
	slices.SortStableFunc(rep.Rows, func(a, b report.Row) int {
		if d := order["c"+a.Case] - order["c"+b.Case]; d != 0 {
			return d
		}
		return order["l"+a.Library] - order["l"+b.Library]
	})
}

// entry is one library's driver and accumulated result within one case.
type entry struct {
	l   drivers.Library
	d   drivers.Driver
	res runner.Result
	na  string // why the library could not run the case

	logs       int
	logSamples []string
}

// openEntry opens a fresh driver for l; a failure is kept as the entry's
// reason not to run.
func openEntry(ctx context.Context, l drivers.Library, addrs []string, contended bool) *entry {
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	e := &entry{l: l}
	d, err := l.Open(ctx, addrs, contended)
	if err != nil {
		e.na = "open failed: " + err.Error()
		return e
	}
	e.d = d
	return e
}

// add merges one round's result and the client's log lines during it.
func (e *entry) add(res runner.Result, logs int, samples []string) {
	e.res.Merge(res)
	e.logs += logs
	for _, s := range samples {
		if len(e.logSamples) < clientLogSamples && !contains(e.logSamples, s) {
			e.logSamples = append(e.logSamples, s)
		}
	}
}

// row returns the report row for the rounds run.
func (e *entry) row(caseID string) report.Row {
	if e.na != "" {
		return report.Row{Case: caseID, Library: e.l.Name, NA: e.na}
	}
	row := report.NewRow(caseID, e.l.Name, e.res)
	row.ClientLogs, row.ClientLogSamples = e.logs, e.logSamples
	return row
}

func closeEntries(entries []*entry) {
	for _, e := range entries {
		if e.d != nil {
			e.d.Close()
			e.d = nil
		}
	}
}

// newBar returns a progress bar over total milliseconds of planned runs,
// invisible with -quiet.
func newBar(cfg config, w io.Writer, total int64) *progressbar.ProgressBar {
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetVisibility(!cfg.quiet),
		progressbar.OptionSetWidth(30),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionShowDescriptionAtLineEnd(),
	)
}

// tick advances bar with the clock during one run, up to that run's share.
func tick(bar *progressbar.ProgressBar, base int64, share time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				bar.Set64(base + min(time.Since(start), share).Milliseconds())
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// meta describes the run and the machine.
func meta(cfg config, rtt time.Duration) report.Meta {
	return report.Meta{
		Date:          time.Now(),
		Command:       cfg.command,
		Commit:        commit(),
		GoVersion:     runtime.Version(),
		Platform:      runtime.GOOS + "/" + runtime.GOARCH,
		GOMAXPROCS:    runtime.GOMAXPROCS(0),
		CPUModel:      cpuModel(),
		RedisVersion:  redisVersion(cfg.server),
		RoundTripUs:   float64(rtt) / float64(time.Microsecond),
		DurationSec:   cfg.duration.Seconds(),
		WarmupSec:     cfg.warmup.Seconds(),
		Rounds:        cfg.rounds,
		SlowLatencyMs: float64(cfg.slowLatency) / float64(time.Millisecond),
	}
}

// commit returns the short hash of the checked-out commit, if git knows it.
func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// cpuModel returns the first "model name" of /proc/cpuinfo, if any.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// redisVersion returns the "v=" field of redis-server --version.
func redisVersion(server string) string {
	out, err := exec.Command(server, "--version").Output()
	if err != nil {
		return "unknown"
	}
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return strings.TrimSpace(string(out))
}
