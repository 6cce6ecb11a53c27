package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/redlock-go/redlock/bench/internal/drivers"
	"github.com/redlock-go/redlock/bench/internal/nodes"
	"github.com/redlock-go/redlock/bench/internal/report"
	"github.com/redlock-go/redlock/bench/internal/runner"
)

// session is one run's nodes and the state shared by its cases: the
// proxies, the progress, the sequence that keeps every round's keys new.
type session struct {
	cfg     config
	servers *nodes.Set
	topo    *topology
	logs    *clientLog
	seq     int

	bar  *progressbar.ProgressBar
	done time.Duration // planned time of the rounds run so far
}

// planned is a case and the libraries that run it.
type planned struct {
	c    benchCase
	libs []drivers.Library
}

// newSession starts count nodes, measures their round trip, lifts the
// restart quarantine on them, and returns the session with a report that
// describes the run and lists libs.
func newSession(ctx context.Context, cfg config, logs *clientLog, count int, libs []drivers.Library) (*session, *report.Report, error) {
	setupCtx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	servers, err := nodes.Start(setupCtx, cfg.server, count)
	if err != nil {
		return nil, nil, err
	}
	addrs := servers.Addrs()
	rtt, err := nodes.RoundTrip(setupCtx, addrs[0], roundTripPings)
	if err != nil {
		servers.Close()
		return nil, nil, err
	}
	quarantine, err := drivers.MarkReady(setupCtx, addrs)
	if err != nil {
		servers.Close()
		return nil, nil, err
	}
	rep := &report.Report{Meta: meta(cfg, rtt)}
	rep.Meta.MarkedReady = quarantine
	for _, l := range libs {
		rep.Libraries = append(rep.Libraries, report.Library{
			Name: l.Name, Ours: l.Ours, Baseline: l.Baseline, Floor: l.Floor, Trade: l.Trade, TradeOf: l.TradeOf, Settings: l.Settings, Semaphore: l.Semaphore, ReadWrite: l.ReadWrite,
		})
	}
	s := &session{
		cfg: cfg, servers: servers, logs: logs,
		topo: &topology{addrs: addrs, slowLatency: cfg.slowLatency, lanDelay: cfg.sizes.lanDelay},
	}
	return s, rep, nil
}

// close stops the proxies and the nodes.
func (s *session) close() {
	s.topo.close()
	s.servers.Close()
}

// plan pairs every case with the libraries that can run it, and adds a
// row to rep for each library that cannot, saying why.
func (s *session) plan(rep *report.Report, cs []benchCase, libs []drivers.Library) []planned {
	var plan []planned
	for _, c := range cs {
		p := planned{c: c}
		for _, l := range libs {
			if why := notApplicable(l, c.Case); why != "" {
				rep.Rows = append(rep.Rows, report.Row{Case: c.ID, Library: l.Name, NA: why})
				continue
			}
			p.libs = append(p.libs, l)
		}
		plan = append(plan, p)
	}
	return plan
}

// notApplicable says why l cannot run c, or "".
func notApplicable(l drivers.Library, c report.Case) string {
	if l.MaxNodes > 0 && c.Nodes > l.MaxNodes {
		return fmt.Sprintf("locks on %d node only", l.MaxNodes)
	}
	if l.Baseline && c.Handoffs {
		return "not a lock: run only where keys are not contended"
	}
	if l.Floor && !floorRuns(c) {
		return "the least work of a fenced lock: run only in the one-goroutine cases of a plain lock"
	}
	return ""
}

// floorRuns says whether the fenced floor runs in c: one goroutine taking
// a plain lock, no key handed between clients, no slow node.
func floorRuns(c report.Case) bool {
	return c.Workers == 1 && !c.Handoffs && c.SlowNodes == 0 && c.Mutex()
}

// run runs the plan, adding its rows and round trips to rep, with a
// progress bar on progress.
func (s *session) run(ctx context.Context, rep *report.Report, plan []planned, progress io.Writer) error {
	segments := 0
	for _, p := range plan {
		segments += len(p.libs)
	}
	s.bar = newBar(s.cfg, progress, int64(segments)*s.perLibrary().Milliseconds())
	for _, p := range plan {
		rows, rtt, err := s.runCase(ctx, p)
		if err != nil {
			return err
		}
		rep.Rows = append(rep.Rows, rows...)
		for i := range rep.Cases {
			if rep.Cases[i].ID == p.c.ID {
				rep.Cases[i].RoundTripUs, rep.Cases[i].MeasuredDelayUs = rtt.medians()
			}
		}
	}
	s.bar.Finish()
	fmt.Fprintln(progress)
	return nil
}

// perLibrary is the planned time of one library in one case.
func (s *session) perLibrary() time.Duration {
	return s.cfg.warmup + time.Duration(s.cfg.rounds-1)*s.laterWarmup() + s.cfg.duration
}

func (s *session) laterWarmup() time.Duration { return s.cfg.warmup / laterWarmupDivisor }

// runCase runs one case with its libraries and returns their rows and the
// round trips sampled before its rounds.
// Every library of the case gets fresh connections, then the measured time
// is split in rounds that take the libraries in turn, so that a burst of
// load from elsewhere on the machine falls on all of them alike.
func (s *session) runCase(ctx context.Context, p planned) ([]report.Row, roundTrips, error) {
	addrs, err := s.topo.addrsFor(ctx, p.c.Case)
	if err != nil {
		return nil, roundTrips{}, err
	}
	entries := make([]*entry, len(p.libs))
	for i, l := range p.libs {
		entries[i] = openEntry(ctx, l, addrs, p.c)
	}
	defer closeEntries(entries)
	var rtts roundTrips
	for round := range s.cfg.rounds {
		for k := range entries {
			e := entries[(k+round)%len(entries)]
			if ctx.Err() != nil {
				return nil, rtts, ctx.Err()
			}
			if e.na == "" {
				rtts.sample(ctx, addrs[0], s.topo.addrs[0], p.c.DelayUs > 0)
			}
			s.runRound(ctx, p.c, e, round)
		}
	}
	c := p.c.Case
	c.RoundTripUs, c.MeasuredDelayUs = rtts.medians()
	rows := make([]report.Row, len(entries))
	for i, e := range entries {
		rows[i] = e.row(p.c.ID)
		rows[i].FloorUs = c.Floor(rows[i])
	}
	return rows, rtts, nil
}

// roundTrips are PING round trips sampled before the rounds of a case: to
// its first node, and, where that is a proxy, to the node behind it.
type roundTrips struct {
	first, direct []time.Duration
}

// sample sends PINGs to first, and to direct too if delayed says first is
// a proxy in front of it.
func (r *roundTrips) sample(ctx context.Context, first, direct string, delayed bool) {
	if t, err := nodes.RoundTrips(ctx, first, roundTripSample); err == nil {
		r.first = append(r.first, t...)
	}
	if !delayed {
		return
	}
	if t, err := nodes.RoundTrips(ctx, direct, roundTripSample); err == nil {
		r.direct = append(r.direct, t...)
	}
}

// medians returns the median round trip to the first node, and the delay
// each way the proxy added, measured (0 without a proxy): half the
// difference of the medians through it and around it; in microseconds.
func (r roundTrips) medians() (roundTripUs, delayUs float64) {
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	roundTripUs = us(nodes.Median(r.first))
	if len(r.direct) > 0 {
		delayUs = (roundTripUs - us(nodes.Median(r.direct))) / 2
	}
	return roundTripUs, delayUs
}

// runRound runs one round of c with e's library and adds the result to e.
func (s *session) runRound(ctx context.Context, c benchCase, e *entry, round int) {
	warmup := s.cfg.warmup
	if round > 0 {
		warmup = s.laterWarmup()
	}
	share := warmup + s.cfg.duration/time.Duration(s.cfg.rounds)
	defer func() {
		s.done += share
		s.bar.Set64(s.done.Milliseconds())
	}()
	if e.na != "" {
		return
	}
	s.bar.Describe(fmt.Sprintf("%-15s %-16s round %d/%d", c.ID, e.l.Name, round+1, s.cfg.rounds))
	stopTicker := tick(s.bar, s.done.Milliseconds(), share)
	s.logs.take()
	res, err := runner.Run(ctx, e.ds, c.work, runner.Options{
		Warmup: warmup,
		// The first round's clients are new: its warm-up lasts until each
		// has finished a cycle, so that no library's connecting is timed.
		WarmEveryWorker: round == 0,
		Duration:        s.cfg.duration / time.Duration(s.cfg.rounds),
		MinCycles:       1,
		KeyPrefix:       "bench:" + strconv.Itoa(s.seq) + ":",
		ServerCPU:       s.servers.CPU,
		Connections:     s.servers.Connections,
		Commands:        s.servers.Commands,
	})
	s.seq++
	n, samples := s.logs.take()
	stopTicker()
	if err != nil {
		e.na = "run failed: " + err.Error()
		return
	}
	e.add(res, n, samples)
}

// entry is one library's drivers and accumulated result within one case.
type entry struct {
	l   drivers.Library
	ds  []drivers.Driver // one per client of the case
	res runner.Result
	na  string // why the library could not run the case

	logs       int
	logSamples []string
}

// openEntry opens fresh drivers for l, one per client of c (one if its
// goroutines share a client); a failure is kept as the entry's reason not
// to run.
func openEntry(ctx context.Context, l drivers.Library, addrs []string, c benchCase) *entry {
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	e := &entry{l: l}
	for range max(c.Clients, 1) {
		d, err := l.Open(ctx, addrs, c.Handoffs)
		if err != nil {
			e.na = "open failed: " + err.Error()
			closeEntries([]*entry{e})
			return e
		}
		e.ds = append(e.ds, d)
	}
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
		for _, d := range e.ds {
			d.Close()
		}
		e.ds = nil
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
