// Package runner drives one benchmark case against one lock library: a fixed
// number of goroutines acquiring and releasing locks in a loop, a warm-up,
// then a timed window in which cycles, latencies, allocations and CPU time
// are counted.
package runner

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/redlock-go/redlock/bench/internal/drivers"
)

// Keys says which lock names a case's goroutines use.
type Keys int

const (
	// NewKeyEachCycle gives every cycle of every goroutine a name never used
	// before: no contention, and no state left from an earlier cycle.
	NewKeyEachCycle Keys = iota
	// KeyPerWorker gives each goroutine its own name for all its cycles.
	KeyPerWorker
	// SharedKey makes every goroutine lock the same name: each cycle is a
	// handoff, and the latency recorded is the wait in Acquire.
	SharedKey
)

// errorPause is how long a goroutine waits after a failed cycle before the
// next one, so that a broken library shows as errors, not as a busy loop.
const errorPause = time.Millisecond

// Latency bounds of the histograms, in microseconds: 1 µs to 1 minute at
// three significant digits (0.1% error) costs about 200 KB per goroutine.
const (
	minLatencyMicros = 1
	maxLatencyMicros = 60_000_000
	latencyDigits    = 3
)

// Case is one workload.
type Case struct {
	Workers int
	Keys    Keys
	// AcquireTimeout, if set, gives every Acquire a deadline of its own,
	// as a caller that waits for a contended lock does. An Acquire that
	// reaches it counts as a timeout, not an error; the ones begun in the
	// measured window count even if they end after it, and the run waits
	// for them.
	AcquireTimeout time.Duration
	// Hold is how long a goroutine keeps the lock before releasing it,
	// spent on the CPU: a sleep shorter than a millisecond lasts about a
	// millisecond when the process is otherwise idle (the runtime's poller
	// waits in whole milliseconds on Linux).
	Hold time.Duration
	// Limit, if set, makes every cycle take one of Limit permits of a
	// semaphore on its name (drivers.AcquirePermit) instead of its lock.
	Limit int
	// WriteEvery, if set, makes the name a read-write lock: one cycle in
	// WriteEvery of every goroutine takes it as a writer (Acquire), the
	// others as readers (drivers.AcquireShared).
	WriteEvery int
	// Try, if set, makes every cycle take its lock by one attempt at a
	// time with a short pause after each refusal (drivers.TryLoop), as a
	// caller looping on its library's single try does, instead of the
	// library's blocking acquire.
	Try bool
}

// Options tunes a run.
type Options struct {
	// Warmup runs the workload unmeasured first: connections are opened,
	// scripts loaded, pools grown.
	Warmup time.Duration
	// WarmEveryWorker, if set, extends the warm-up until every goroutine
	// has finished a cycle, for at most maxExtension: a goroutine's first
	// cycle opens its client's connections and subscriptions, and many
	// clients starting at once can take longer than Warmup to.
	WarmEveryWorker bool
	// Duration is the measured window.
	Duration time.Duration
	// MinCycles, if set, extends the window past Duration until that many
	// cycles have been counted in it, for at most Duration again plus
	// maxExtension: a window too short for one cycle measures nothing.
	MinCycles int64
	// KeyPrefix starts every lock name, so that runs never see each other's
	// keys.
	KeyPrefix string
	// ServerCPU, if set, returns the CPU time used so far by the Redis
	// servers, to report their cost per cycle too.
	ServerCPU func() time.Duration
	// Connections, if set, returns how many connections the servers have
	// accepted so far, to show connection churn.
	Connections func(ctx context.Context) int64
	// Commands, if set, returns how many times the servers have run each
	// command so far, to count the commands of a cycle.
	Commands func(ctx context.Context) map[string]int64
}

// Result is what one run measured in its window.
type Result struct {
	Cycles  int64         // completed acquire+release cycles
	Elapsed time.Duration // length of the window
	Errors  int64         // failed cycles
	LastErr string        // the last failure, if any
	// Timeouts counts the acquisitions begun in the window that reached
	// Case.AcquireTimeout.
	Timeouts int64
	// Again counts, in a case of one shared plain lock, the grants that went
	// to the goroutine that held the lock just before: a library that lets
	// the releaser take the lock again ahead of those waiting shows here.
	Again int64

	// Latency of a cycle (acquire + release), or for SharedKey of the wait
	// in Acquire.
	P50, P90, P99, Max time.Duration

	Mallocs    uint64        // heap allocations in the window, whole process
	AllocBytes uint64        // bytes allocated in the window, whole process
	CPU        time.Duration // user+system CPU time of this process
	ServerCPU  time.Duration // user+system CPU time of the Redis servers
	// NewConns counts the connections the servers accepted in the window
	// (a few of them the benchmark's own probes).
	NewConns int64
	// Commands counts the commands the servers ran in the window, by
	// name, those run inside scripts and functions included.
	Commands map[string]int64

	// Readers and Writers split the cycles and latencies of a read-write
	// case (Case.WriteEvery) by kind; they are empty in other cases.
	Readers, Writers Grants

	hist *hdrhistogram.Histogram // the latencies, for Merge
}

// Grants are the cycles of one kind in a read-write case, readers' or
// writers', and the percentiles of their latency.
type Grants struct {
	Cycles        int64
	P50, P99, Max time.Duration

	hist *hdrhistogram.Histogram // nil until a cycle is recorded or merged
}

// record adds one cycle of latency us.
func (g *Grants) record(us int64) {
	if g.hist == nil {
		g.hist = newHistogram()
	}
	g.Cycles++
	g.hist.RecordValue(us)
}

// merge adds o's cycles to g and recomputes the percentiles over both.
func (g *Grants) merge(o Grants) {
	if o.hist == nil {
		return
	}
	if g.hist == nil {
		g.hist = newHistogram()
	}
	g.Cycles += o.Cycles
	g.hist.Merge(o.hist)
	g.P50 = micros(g.hist.ValueAtQuantile(50))
	g.P99 = micros(g.hist.ValueAtQuantile(99))
	g.Max = micros(g.hist.Max())
}

// Merge adds the counts of o, a run of the same case and library, to r and
// recomputes the percentiles over both.
func (r *Result) Merge(o Result) {
	r.Cycles += o.Cycles
	r.Elapsed += o.Elapsed
	r.Errors += o.Errors
	r.Timeouts += o.Timeouts
	r.Again += o.Again
	if o.LastErr != "" {
		r.LastErr = o.LastErr
	}
	r.Mallocs += o.Mallocs
	r.AllocBytes += o.AllocBytes
	r.CPU += o.CPU
	r.ServerCPU += o.ServerCPU
	r.NewConns += o.NewConns
	for name, n := range o.Commands {
		if r.Commands == nil {
			r.Commands = map[string]int64{}
		}
		r.Commands[name] += n
	}
	if r.hist == nil {
		r.hist = newHistogram()
	}
	if o.hist != nil {
		r.hist.Merge(o.hist)
	}
	r.Readers.merge(o.Readers)
	r.Writers.merge(o.Writers)
	r.percentiles()
}

func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(minLatencyMicros, maxLatencyMicros, latencyDigits)
}

// micros converts a histogram's value to a duration.
func micros(v int64) time.Duration { return time.Duration(v) * time.Microsecond }

// percentiles fills P50 to Max from the histogram.
func (r *Result) percentiles() {
	r.P50 = micros(r.hist.ValueAtQuantile(50))
	r.P90 = micros(r.hist.ValueAtQuantile(90))
	r.P99 = micros(r.hist.ValueAtQuantile(99))
	r.Max = micros(r.hist.Max())
}

// Rate returns cycles per second.
func (r Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Cycles) / r.Elapsed.Seconds()
}

// PerCycle divides v by the number of cycles.
func (r Result) PerCycle(v float64) float64 {
	if r.Cycles == 0 {
		return 0
	}
	return v / float64(r.Cycles)
}

// worker is one goroutine's counters; only it writes them, and they are read
// after it ended.
type worker struct {
	hist     *hdrhistogram.Histogram
	reads    Grants // in a read-write case, the readers' cycles
	writes   Grants // and the writers'
	cycles   int64
	errors   int64
	timeouts int64
	again    int64
	lastErr  error
	_        [64]byte // keep workers' counters on separate cache lines
}

// Run runs c against ds: Warmup, then Duration measured. Goroutine i uses
// ds[i%len(ds)]: one driver shared by every goroutine, as one process with
// many goroutines would, or one per goroutine, as separate processes would.
// It blocks until every goroutine has stopped. The allocation and CPU
// counts are those of the whole process in the window, the library's
// background goroutines included.
func Run(ctx context.Context, ds []drivers.Driver, c Case, o Options) (Result, error) {
	if c.Workers < 1 || len(ds) < 1 {
		return Result{}, fmt.Errorf("runner: %d workers, %d drivers", c.Workers, len(ds))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := make([]worker, c.Workers)
	for i := range workers {
		workers[i].hist = newHistogram()
	}
	runtime.GC()

	var flags runFlags
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop(ctx, ds[i%len(ds)], c, o.KeyPrefix, i, &workers[i], &flags)
		}()
	}
	// Goroutines waiting for a shared key without a deadline of their own
	// are woken by the end of ctx; with one, the run waits for them.
	finish := func() {
		flags.stop.Store(true)
		if c.AcquireTimeout == 0 {
			cancel()
		}
		wg.Wait()
	}

	if !pause(ctx, o.Warmup) || o.WarmEveryWorker && !awaitWarm(ctx, &flags, int64(c.Workers)) {
		finish()
		return Result{}, ctx.Err()
	}
	before := snapshot(ctx, o, false)
	flags.measuring.Store(true)
	completed := pause(ctx, o.Duration) && awaitCycles(ctx, &flags, o)
	flags.measuring.Store(false)
	after := snapshot(ctx, o, true)
	finish()
	if !completed {
		return Result{}, context.Canceled
	}
	return collect(workers, before, after), nil
}

// maxExtension bounds how long past twice its Duration a window waits
// for its MinCycles.
const maxExtension = 5 * time.Second

// extensionPoll is how often an extended window checks its count.
const extensionPoll = 5 * time.Millisecond

// awaitCycles waits until flags count o.MinCycles cycles, ctx ends, or
// the extension's bound passes; it reports false only if ctx ended.
func awaitCycles(ctx context.Context, flags *runFlags, o Options) bool {
	deadline := time.Now().Add(o.Duration + maxExtension)
	for flags.counted.Load() < o.MinCycles && time.Now().Before(deadline) {
		if !pause(ctx, extensionPoll) {
			return false
		}
	}
	return true
}

// awaitWarm waits until every one of workers goroutines has finished a
// cycle, ctx ends, or maxExtension passes; it reports false only if ctx
// ended.
func awaitWarm(ctx context.Context, flags *runFlags, workers int64) bool {
	deadline := time.Now().Add(maxExtension)
	for flags.warm.Load() < workers && time.Now().Before(deadline) {
		if !pause(ctx, extensionPoll) {
			return false
		}
	}
	return true
}

// runFlags tell the goroutines of a run when to count and when to stop.
type runFlags struct {
	measuring, stop atomic.Bool
	// counted is how many cycles the goroutines have counted so far.
	counted atomic.Int64
	// warm is how many goroutines have finished a cycle.
	warm atomic.Int64
	// holder is the goroutine that took a shared plain lock last, plus one
	// (0 before the first grant).
	holder atomic.Int64
}

// noteWarm counts a goroutine as warm at its first cycle that succeeded;
// warm says whether it was counted already.
func (f *runFlags) noteWarm(warm *bool, err error) {
	if !*warm && err == nil {
		*warm = true
		f.warm.Add(1)
	}
}

// again records that goroutine id took the shared plain lock and reports
// whether it was also the one that held it last.
func (f *runFlags) again(id int) bool {
	return f.holder.Swap(int64(id)+1) == int64(id)+1
}

// collect sums the goroutines' counters and the window's snapshots.
func collect(workers []worker, before, after point) Result {
	r := Result{
		Elapsed:    after.at.Sub(before.at),
		Mallocs:    after.mallocs - before.mallocs,
		AllocBytes: after.bytes - before.bytes,
		CPU:        after.cpu - before.cpu,
		ServerCPU:  after.serverCPU - before.serverCPU,
		NewConns:   after.conns - before.conns,
		Commands:   commandsBetween(before.commands, after.commands),
	}
	r.hist = newHistogram()
	for i := range workers {
		w := &workers[i]
		r.Cycles += w.cycles
		r.Errors += w.errors
		r.Timeouts += w.timeouts
		r.Again += w.again
		if w.lastErr != nil {
			r.LastErr = w.lastErr.Error()
		}
		r.hist.Merge(w.hist)
		r.Readers.merge(w.reads)
		r.Writers.merge(w.writes)
	}
	r.percentiles()
	return r
}

// loop is one goroutine's cycles until stop is set.
func loop(ctx context.Context, d drivers.Driver, c Case, prefix string, id int, w *worker, flags *runFlags) {
	name := prefix
	switch c.Keys {
	case KeyPerWorker:
		name = prefix + strconv.Itoa(id)
	case SharedKey:
		name = prefix + "shared"
	}
	var granted func() bool
	if c.Keys == SharedKey && c.Limit == 0 && c.WriteEvery == 0 {
		granted = func() bool { return flags.again(id) }
	}
	buf := make([]byte, 0, len(prefix)+32)
	warm := false
	for seq := 0; !flags.stop.Load(); seq++ {
		key := name
		if c.Keys == NewKeyEachCycle {
			buf = strconv.AppendInt(append(buf[:0], prefix...), int64(id), 10)
			buf = append(buf, '-')
			buf = strconv.AppendInt(buf, int64(seq), 10)
			key = string(buf) // the one allocation the harness makes per cycle
		}
		begunInWindow := flags.measuring.Load()
		write := c.WriteEvery > 0 && (seq+id)%c.WriteEvery == 0
		t, err := cycle(ctx, d, c, key, write, granted)
		if t.timedOut {
			if begunInWindow {
				w.timeouts++
			}
			continue
		}
		flags.noteWarm(&warm, err)
		if flags.stop.Load() || !flags.measuring.Load() {
			continue
		}
		if err != nil {
			w.errors++
			w.lastErr = err
			time.Sleep(errorPause)
			continue
		}
		w.record(c, t, write)
		flags.counted.Add(1)
	}
}

// record counts one completed cycle with times t: its whole length, or
// for a shared key the wait in Acquire; in a read-write case, also as a
// writer's or a reader's.
func (w *worker) record(c Case, t cycleTimes, write bool) {
	w.cycles++
	if t.again {
		w.again++
	}
	lat := t.end.Sub(t.start)
	if c.Keys == SharedKey {
		lat = t.acquired.Sub(t.start)
	}
	us := max(lat.Microseconds(), minLatencyMicros)
	w.hist.RecordValue(us)
	switch {
	case c.WriteEvery == 0:
	case write:
		w.writes.record(us)
	default:
		w.reads.record(us)
	}
}

// cycleTimes are the instants of one cycle.
type cycleTimes struct {
	start, acquired, end time.Time
	// timedOut says Acquire reached the case's AcquireTimeout.
	timedOut bool
	// again says the lock went to the goroutine that held it last.
	again bool
}

// cycle acquires key (as a writer if write, in a read-write case), holds
// it for c.Hold and releases it. granted, if set, is called once the lock
// is taken and reports whether the same goroutine held it last.
func cycle(ctx context.Context, d drivers.Driver, c Case, key string, write bool, granted func() bool) (cycleTimes, error) {
	var t cycleTimes
	t.start = time.Now()
	actx, cancel := ctx, context.CancelFunc(func() {})
	if c.AcquireTimeout > 0 {
		actx, cancel = context.WithTimeout(ctx, c.AcquireTimeout)
	}
	held, err := take(actx, d, c, key, write)
	t.timedOut = err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded)
	cancel()
	t.acquired = time.Now()
	if err == nil {
		if granted != nil {
			t.again = granted()
		}
		spin(c.Hold)
		// Release ignores ctx's end: a lock taken just before the
		// window closed is still released.
		err = d.Release(context.WithoutCancel(ctx), held)
	}
	t.end = time.Now()
	return t, err
}

// take acquires what a cycle of c takes on key: a permit of the semaphore
// key, the read-write lock key as a reader unless write, or the lock key,
// blocking or by one attempt at a time.
func take(ctx context.Context, d drivers.Driver, c Case, key string, write bool) (any, error) {
	switch {
	case c.Try:
		return drivers.TryLoop(ctx, d, key)
	case c.Limit > 0:
		return drivers.AcquirePermit(ctx, d, key, c.Limit)
	case c.WriteEvery > 0 && !write:
		return drivers.AcquireShared(ctx, d, key)
	}
	return d.Acquire(ctx, key)
}

// spin keeps the CPU busy for d.
func spin(d time.Duration) {
	if d <= 0 {
		return
	}
	for start := time.Now(); time.Since(start) < d; {
	}
}

// point is the counters at one instant.
type point struct {
	at             time.Time
	mallocs, bytes uint64
	cpu, serverCPU time.Duration
	conns          int64
	commands       map[string]int64
}

// commandsBetween returns the commands run between two counts, nil when
// they were not counted.
func commandsBetween(before, after map[string]int64) map[string]int64 {
	if after == nil {
		return nil
	}
	ran := map[string]int64{}
	for name, n := range after {
		if d := n - before[name]; d > 0 {
			ran[name] = d
		}
	}
	return ran
}

// snapshot reads the counters. Reading the servers' costs this process a few
// requests, so they are read before the process's counters at the start of
// the window, and after them at its end.
func snapshot(ctx context.Context, o Options, end bool) point {
	var p point
	servers := func() {
		if o.ServerCPU != nil {
			p.serverCPU = o.ServerCPU()
		}
		if o.Connections != nil {
			p.conns = o.Connections(ctx)
		}
		if o.Commands != nil {
			p.commands = o.Commands(ctx)
		}
	}
	if !end {
		servers()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	p.at, p.mallocs, p.bytes, p.cpu = time.Now(), ms.Mallocs, ms.TotalAlloc, processCPU()
	if end {
		servers()
	}
	return p
}

// pause waits d or until ctx ends, and reports whether d passed.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
