package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
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
	// roundTripPings is how many PINGs measure the loopback round trip.
	roundTripPings = 2000
	// setupTimeout bounds starting the nodes and opening one library.
	setupTimeout = 30 * time.Second
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
		rep.Libraries = append(rep.Libraries, report.Library{Name: l.Name, Ours: l.Ours, Settings: l.Settings})
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

	type job struct {
		c benchCase
		l drivers.Library
	}
	var jobs []job
	for _, c := range selected {
		for _, l := range libs {
			if l.MaxNodes > 0 && c.Nodes > l.MaxNodes {
				rep.Rows = append(rep.Rows, report.Row{Case: c.ID, Library: l.Name, NA: fmt.Sprintf("locks on %d node only", l.MaxNodes)})
				continue
			}
			jobs = append(jobs, job{c, l})
		}
	}
	perJob := cfg.warmup + cfg.duration
	bar := newBar(cfg, progress, int64(len(jobs))*perJob.Milliseconds())

	for i, j := range jobs {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		bar.Describe(fmt.Sprintf("%-15s %-16s", j.c.ID, j.l.Name))
		runAddrs := addrs[:j.c.Nodes]
		if j.c.SlowNodes > 0 {
			if runAddrs, err = slowAddrs(); err != nil {
				return nil, err
			}
		}
		base := int64(i) * perJob.Milliseconds()
		stopTicker := tick(bar, base, perJob)
		logs.take()
		row := runOne(ctx, j.c, j.l, runAddrs, cfg, servers.CPU, i)
		row.ClientLogs, row.ClientLogSamples = logs.take()
		stopTicker()
		bar.Set64(base + perJob.Milliseconds())
		rep.Rows = append(rep.Rows, row)
	}
	bar.Finish()
	fmt.Fprintln(progress)
	return rep, nil
}

// runOne opens a fresh driver, runs one case with it, and closes it. A
// failure to open or run shows in the row.
func runOne(ctx context.Context, c benchCase, l drivers.Library, addrs []string, cfg config, serverCPU func() time.Duration, seq int) report.Row {
	setupCtx, cancel := context.WithTimeout(ctx, setupTimeout)
	d, err := l.Open(setupCtx, addrs, c.keys == runner.SharedKey)
	cancel()
	if err != nil {
		return report.Row{Case: c.ID, Library: l.Name, NA: "open failed: " + err.Error()}
	}
	defer d.Close()
	res, err := runner.Run(ctx, d, runner.Case{Workers: c.Workers, Keys: c.keys}, runner.Options{
		Warmup:    cfg.warmup,
		Duration:  cfg.duration,
		KeyPrefix: "bench:" + strconv.Itoa(seq) + ":",
		ServerCPU: serverCPU,
	})
	if err != nil {
		return report.Row{Case: c.ID, Library: l.Name, NA: "run failed: " + err.Error()}
	}
	return report.NewRow(c.ID, l.Name, res)
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
