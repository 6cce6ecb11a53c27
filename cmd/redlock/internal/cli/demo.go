package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
)

// Demo settings. The defaults make a run of a few seconds in which each
// worker gets the lock many times, with the faults in the middle.
const (
	demoNodeCount       = 5
	defaultDemoDuration = 6 * time.Second
	defaultDemoWorkers  = 4
	// defaultDemoTTL is the demo lock's TTL: short, so that the restarted
	// node's quarantine (at least one TTL) ends within the demo, yet tens of
	// times the critical section.
	defaultDemoTTL = time.Second
	// demoNodeTimeout is the per-node timeout: generous, because the
	// embedded nodes share this process's CPU with the workers.
	demoNodeTimeout = 100 * time.Millisecond
	// demoWorkMin and demoWorkMax bound the critical section: read the
	// counter, work, write it back. The work between the read and the write
	// is the window in which a second holder would lose an update.
	demoWorkMin, demoWorkMax = 5 * time.Millisecond, 25 * time.Millisecond
	// demoThinkMax bounds the pause after a release, which lets the other
	// workers in.
	demoThinkMax = 20 * time.Millisecond
	// demoRetryMin and demoRetryMax pace the workers' attempts.
	demoRetryMin, demoRetryMax = 2 * time.Millisecond, 30 * time.Millisecond
	// demoTick is how often the node view refreshes on a terminal;
	// demoLogEvery how often a status line is printed otherwise.
	demoTick     = 100 * time.Millisecond
	demoLogEvery = 500 * time.Millisecond
	// demoKey is the lock the workers contend for.
	demoKey = "demo-counter"
)

func demoCommand() *command {
	return &command{
		name:     "demo",
		synopsis: "[flags]",
		summary:  "watch workers share one lock on five nodes while two fail (no setup)",
		about: `
Starts five Redis-protocol nodes inside this process (no Redis needed; with
--real, redis-server processes from PATH), marks them ready, and runs workers
that contend for one lock. Each worker, in a loop: acquires the lock, reads a
shared counter, works a few milliseconds, writes the counter back plus one
together with the lock's fencing token, and releases the lock. The store
refuses a write whose fencing token is not above every one it has seen.

Halfway through, two of the five nodes are killed: three are still a
majority, so locking goes on. Later one of them comes back empty, having
forgotten the locks it granted: it sits out every quorum for the recovery
delay (one TTL here) so that it cannot help grant a lock that is still held,
then votes again.

Live progress shows, for each node, whose token it holds (the worker's
number), '*' for an attempt that has not won (yet), '.' when free, 'r' while
recovering, 'x' when down. The summary
checks the guarantees:
  at most one holder at a time   the most workers inside at once is 1
  no lost updates                the counter equals the number of writes
  fencing tokens increase        every write's token is above the last one`,
		exits: []exitDoc{
			{"0", "every check passed"},
			{code(exitFailure), "a check failed"},
			docUsage,
			{code(exitUnavailable), "the nodes could not be started (--real needs redis-server on PATH)"},
			{"130", "interrupted (the summary is printed first)"},
		},
		setup: setupDemo,
	}
}

type demoConfig struct {
	duration time.Duration
	workers  int
	ttl      time.Duration
	real     bool
	faults   bool
	verbose  bool
}

func setupDemo(fs *flag.FlagSet) runner {
	c := &demoConfig{}
	secondsVar(fs, &c.duration, "duration", defaultDemoDuration, "how long the workers run: a `duration`, or a bare number of seconds")
	fs.IntVar(&c.workers, "workers", defaultDemoWorkers, "how many workers contend for the lock (1 to 9)")
	secondsVar(fs, &c.ttl, "ttl", defaultDemoTTL, "the lock's TTL, and the recovery delay of a restarted node: a `duration`, or a bare number of seconds")
	fs.BoolVar(&c.real, "real", false, "run redis-server processes from PATH instead of embedded nodes")
	fs.BoolVar(&c.faults, "faults", true, "kill two nodes halfway through --duration and bring one back, empty, at 60%")
	fs.BoolVar(&c.verbose, "verbose", false, "print every acquisition")
	return c.run
}

// demoStore is the protected resource: a counter that accepts a write only
// with a fencing token above every token it accepted before.
type demoStore struct {
	mu        sync.Mutex
	counter   int
	lastFence uint64
	firstSeen uint64
	writes    int // accepted
	stale     int // refused: fencing token not above the last one
}

func (s *demoStore) read() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counter
}

// write stores value if fence is above every fence seen, and reports whether
// it did.
func (s *demoStore) write(fence uint64, value int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fence <= s.lastFence {
		s.stale++
		return false
	}
	if s.writes == 0 {
		s.firstSeen = fence
	}
	s.lastFence, s.counter = fence, value
	s.writes++
	return true
}

// demoStats is what the workers record.
type demoStats struct {
	inside     atomic.Int32 // workers inside the critical section now
	maxInside  atomic.Int32
	acquired   atomic.Int64
	handoffs   atomic.Int64
	errors     atomic.Int64 // failed acquisitions other than the end of the demo
	lastWorker atomic.Int32 // worker that acquired last, 0 before any
	late       atomic.Int64 // critical sections that ran past the lock's validity
	mu         sync.Mutex
	waits      []time.Duration
	tokens     map[string]int // token → worker, for the node view
	lastFence  uint64
	lastErr    error
}

func (st *demoStats) enter() {
	n := st.inside.Add(1)
	for {
		m := st.maxInside.Load()
		if n <= m || st.maxInside.CompareAndSwap(m, n) {
			return
		}
	}
}

// demoOut prints the demo's lines: events, and progress that is redrawn in
// place on a terminal.
type demoOut struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	start time.Time
	live  bool // a progress line is on screen, to be overwritten
}

func (o *demoOut) elapsed() string {
	return fmt.Sprintf("%5.1fs", time.Since(o.start).Seconds())
}

// event prints a line that stays.
func (o *demoOut) event(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.live {
		fmt.Fprint(o.w, "\r\033[K")
		o.live = false
	}
	fmt.Fprintf(o.w, "%s  %s\n", o.elapsed(), fmt.Sprintf(format, args...))
}

// progress prints the status line: in place on a terminal, as a new line
// otherwise.
func (o *demoOut) progress(line string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tty {
		fmt.Fprintf(o.w, "\r\033[K%s  %s", o.elapsed(), line)
		o.live = true
		return
	}
	fmt.Fprintf(o.w, "%s  %s\n", o.elapsed(), line)
}

func (o *demoOut) endLive() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.live {
		fmt.Fprintln(o.w)
		o.live = false
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, ok = foregroundGroup(int(f.Fd()))
	return ok
}

func (c *demoConfig) run(ctx context.Context, s streams, args []string) int {
	if code := c.checkArgs(s.stderr, args); code != exitOK {
		return code
	}
	nodes, err := c.startNodes(ctx)
	if err != nil {
		return demoUnavailable(s.stderr, err)
	}
	defer nodes.Close()
	monitor, err := c.dialMonitor(ctx, nodes)
	if err != nil {
		return demoUnavailable(s.stderr, err)
	}
	defer monitor.Close()
	clients, err := c.dialWorkers(ctx, nodes)
	if err != nil {
		return demoUnavailable(s.stderr, err)
	}
	defer closeClients(clients)

	out := &demoOut{w: s.stdout, tty: isTerminal(s.stdout)}
	c.intro(out.w, nodes)
	store := &demoStore{}
	stats := &demoStats{tokens: map[string]int{}}
	c.contend(ctx, monitor, clients, nodes, store, stats, out)
	return c.finish(ctx, out, store, stats)
}

// checkArgs refuses arguments and flag values the demo cannot run with.
func (c *demoConfig) checkArgs(stderr io.Writer, args []string) int {
	if msg := positional(args); msg != "" {
		return usageError(stderr, "demo", msg)
	}
	switch {
	case c.duration <= 0:
		return usageError(stderr, "demo", "--duration must be positive")
	case c.workers < 1 || c.workers > 9:
		return usageError(stderr, "demo", "--workers must be 1 to 9")
	case c.ttl < minTTL:
		return usageError(stderr, "demo", fmt.Sprintf("--ttl %s is below the %s minimum", c.ttl, minTTL))
	}
	return exitOK
}

// demoUnavailable reports that the demo could not set up its nodes or
// clients.
func demoUnavailable(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "redlock demo: %v\n", err)
	return exitUnavailable
}

// startNodes starts the demo's nodes: redis-server processes with --real,
// embedded ones otherwise.
func (c *demoConfig) startNodes(ctx context.Context) (demoNodes, error) {
	if c.real {
		return startReal(ctx, demoNodeCount)
	}
	return startEmbedded(demoNodeCount)
}

// clientOptions are the options of the demo's clients.
func (c *demoConfig) clientOptions() *redlock.Options {
	return &redlock.Options{TTL: c.ttl, NodeTimeout: demoNodeTimeout, RecoveryDelay: c.ttl,
		Retry: uniformRetry{demoRetryMin, demoRetryMax}}
}

// dialMonitor returns the client that watches the nodes, after marking the
// nodes ready: they are brand-new, so they may vote at once, as after
// 'redlock init'.
func (c *demoConfig) dialMonitor(ctx context.Context, nodes demoNodes) (*redlock.Client, error) {
	monitor, err := goredis.Dial(ctx, nodes.URLs(), c.clientOptions())
	if err != nil {
		return nil, err
	}
	if err := monitor.MarkReady(ctx, false); err != nil {
		monitor.Close()
		return nil, err
	}
	return monitor, nil
}

// dialWorkers returns one client per worker.
func (c *demoConfig) dialWorkers(ctx context.Context, nodes demoNodes) ([]*redlock.Client, error) {
	clients := make([]*redlock.Client, 0, c.workers)
	for range c.workers {
		client, err := goredis.Dial(ctx, nodes.URLs(), c.clientOptions())
		if err != nil {
			closeClients(clients)
			return nil, err
		}
		clients = append(clients, client)
	}
	return clients, nil
}

// closeClients closes clients, the last dialled first.
func closeClients(clients []*redlock.Client) {
	for _, client := range slices.Backward(clients) {
		client.Close()
	}
}

// contend runs the workers and the watcher until --duration has passed or
// ctx ends.
func (c *demoConfig) contend(ctx context.Context, monitor *redlock.Client, clients []*redlock.Client, nodes demoNodes,
	store *demoStore, stats *demoStats, out *demoOut) {
	runCtx, stop := context.WithTimeout(ctx, c.duration)
	defer stop()
	out.start = time.Now()
	var workers sync.WaitGroup
	for i, client := range clients {
		workers.Go(func() { c.worker(runCtx, i+1, client, store, stats, out) })
	}
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		c.watch(runCtx, monitor, nodes, stats, store, out)
	}()
	workers.Wait()
	<-watchDone
}

// finish says why the workers stopped, prints the summary, and returns the
// demo's exit code.
func (c *demoConfig) finish(ctx context.Context, out *demoOut, store *demoStore, stats *demoStats) int {
	out.endLive()
	interrupted := ctx.Err() != nil
	if interrupted {
		out.event("interrupted: %v", context.Cause(ctx))
	} else {
		out.event("time is up: the workers finished their critical sections and stopped")
	}
	ok := c.summary(out.w, store, stats)
	switch {
	case interrupted:
		return interruptedExit(ctx)
	case !ok:
		return exitFailure
	}
	return exitOK
}

func (c *demoConfig) intro(w io.Writer, nodes demoNodes) {
	fmt.Fprintf(w, "redlock demo: %d workers share one lock on %d Redis nodes, %s.\n", c.workers, demoNodeCount, nodes.Kind())
	fmt.Fprintf(w, "A lock needs a majority: %d of %d nodes. Each worker loops: acquire %q (TTL %s), read a shared\n"+
		"counter, work %s-%s, write counter+1 with the lock's fencing token, release.\n",
		demoNodeCount/2+1, demoNodeCount, demoKey, c.ttl, demoWorkMin, demoWorkMax)
	if c.faults {
		fmt.Fprintf(w, "At %s two nodes are killed; at %s one comes back empty.\n",
			(c.duration / 2).Round(100*time.Millisecond), (c.duration * 3 / 5).Round(100*time.Millisecond))
	}
	fmt.Fprintf(w, "Nodes: the digit is the worker whose token the node holds, '*' an attempt that has not won (yet),\n"+
		"'.' free, 'r' recovering, 'x' down.\n\n")
}

// worker takes the lock over and over until ctx ends.
func (c *demoConfig) worker(ctx context.Context, id int, client *redlock.Client, store *demoStore, stats *demoStats, out *demoOut) {
	for ctx.Err() == nil {
		start := time.Now()
		lock, err := client.Acquire(ctx, demoKey)
		if err != nil {
			if ctx.Err() == nil {
				stats.errors.Add(1)
				stats.mu.Lock()
				stats.lastErr = err
				stats.mu.Unlock()
			}
			continue
		}
		waited := time.Since(start)
		stats.enter()
		stats.acquired.Add(1)
		if prev := stats.lastWorker.Swap(int32(id)); prev != 0 && prev != int32(id) {
			stats.handoffs.Add(1)
		}
		stats.mu.Lock()
		stats.waits = append(stats.waits, waited)
		stats.tokens[lock.Token()] = id
		stats.lastFence = lock.Fence()
		stats.mu.Unlock()

		// The critical section: read, work, write back with the fence.
		value := store.read()
		time.Sleep(demoWorkMin + rand.N(demoWorkMax-demoWorkMin))
		if time.Now().Before(lock.Until()) {
			accepted := store.write(lock.Fence(), value+1)
			if c.verbose {
				verdict := "written"
				if !accepted {
					verdict = "REFUSED: stale fencing token"
				}
				out.event("worker %d: acquired after %s, fence %d, counter %d -> %d %s",
					id, waited.Round(time.Millisecond), lock.Fence(), value, value+1, verdict)
			}
		} else {
			stats.late.Add(1) // too late to write: a correct holder gives up
		}
		stats.inside.Add(-1)
		lock.Release(context.Background())
		time.Sleep(rand.N(demoThinkMax))
	}
}

// watch injects the faults on schedule, and shows each node's view of the
// lock.
func (c *demoConfig) watch(ctx context.Context, monitor *redlock.Client, nodes demoNodes, stats *demoStats, store *demoStore, out *demoOut) {
	w := &demoWatch{
		killAt:     out.start.Add(c.duration / 2),
		restartAt:  out.start.Add(c.duration * 3 / 5),
		recovering: make([]bool, demoNodeCount),
	}
	tick := time.NewTicker(demoTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		if c.faults {
			c.injectFaults(ctx, w, now, nodes, out)
		}
		icons, states := c.nodeView(ctx, monitor, stats)
		w.noteRecoveries(states, out)
		if out.tty || now.Sub(w.lastLog) >= demoLogEvery {
			w.lastLog = now
			showProgress(out, icons, stats, store)
		}
	}
}

// demoWatch is what watch remembers from one tick to the next.
type demoWatch struct {
	killAt, restartAt time.Time // when the faults are due
	killed, restarted bool      // which faults were injected
	recovering        []bool    // per node, whether it was seen recovering
	lastLog           time.Time // when the status line was last printed
}

// injectFaults kills nodes 4 and 5 once their time has come, then brings
// node 5 back, empty, once its time has come.
func (c *demoConfig) injectFaults(ctx context.Context, w *demoWatch, now time.Time, nodes demoNodes, out *demoOut) {
	if !w.killed && now.After(w.killAt) {
		w.killed = true
		killTwoNodes(nodes, out)
	}
	if w.killed && !w.restarted && now.After(w.restartAt) {
		w.restarted = true
		c.restartNode5(ctx, nodes, out)
	}
}

// killTwoNodes kills nodes 4 and 5, and says what that changes.
func killTwoNodes(nodes demoNodes, out *demoOut) {
	for _, i := range []int{3, 4} {
		if err := nodes.Kill(i); err != nil {
			out.event("killing node %d: %v", i+1, err)
		}
	}
	out.event("killed nodes 4 and 5: 3 of 5 left, still a majority, so locking goes on; " +
		"every acquisition now needs all three, so contenders split the votes more often")
}

// restartNode5 brings node 5 back, empty, and says what that changes.
func (c *demoConfig) restartNode5(ctx context.Context, nodes demoNodes, out *demoOut) {
	if err := nodes.Restart(ctx, 4); err != nil {
		out.event("%v", err)
	} else {
		out.event("node 5 is back, empty: it forgot the locks it granted, so it sits out every quorum for %s", c.ttl)
	}
}

// noteRecoveries remembers which nodes are recovering since the restart,
// and announces each that votes again.
func (w *demoWatch) noteRecoveries(states []redlock.NodeState, out *demoOut) {
	for i, st := range states {
		switch {
		case st.Err == nil && st.Recovering && !w.recovering[i] && w.restarted:
			w.recovering[i] = true
		case st.Err == nil && !st.Recovering && w.recovering[i]:
			w.recovering[i] = false
			out.event("node %d votes again: its recovery delay has passed", i+1)
		}
	}
}

// showProgress prints the status line: the nodes' view of the lock, and the
// workers' totals so far.
func showProgress(out *demoOut, icons string, stats *demoStats, store *demoStore) {
	stats.mu.Lock()
	fence := stats.lastFence
	stats.mu.Unlock()
	out.progress(fmt.Sprintf("nodes [%s]  acquisitions %d  handoffs %d  counter %d  fence %d",
		icons, stats.acquired.Load(), stats.handoffs.Load(), store.read(), fence))
}

// nodeView returns one character per node: the holding worker's number, '*'
// a token no worker holds (an attempt in flight, or one being cleaned up),
// '.' free, 'r' recovering, 'x' unreachable.
func (c *demoConfig) nodeView(ctx context.Context, monitor *redlock.Client, stats *demoStats) (string, []redlock.NodeState) {
	states, err := monitor.Inspect(ctx, demoKey)
	if err != nil {
		return strings.Repeat("?", demoNodeCount), nil
	}
	var b strings.Builder
	stats.mu.Lock()
	defer stats.mu.Unlock()
	for _, st := range states {
		switch {
		case st.Err != nil:
			b.WriteByte('x')
		case st.Recovering:
			b.WriteByte('r')
		case st.Holder == "":
			b.WriteByte('.')
		default:
			if w, ok := stats.tokens[st.Holder]; ok {
				b.WriteByte(byte('0' + w))
			} else {
				b.WriteByte('*')
			}
		}
	}
	return b.String(), states
}

// summary prints the totals and the checks, and reports whether every check
// passed.
func (c *demoConfig) summary(w io.Writer, store *demoStore, stats *demoStats) bool {
	store.mu.Lock()
	counter, writes, stale, first, last := store.counter, store.writes, store.stale, store.firstSeen, store.lastFence
	store.mu.Unlock()
	stats.mu.Lock()
	waits := slices.Clone(stats.waits)
	lastErr := stats.lastErr
	stats.mu.Unlock()
	slices.Sort(waits)
	acquired := stats.acquired.Load()

	fmt.Fprintf(w, "\nSummary\n")
	fmt.Fprintf(w, "  acquisitions          %d\n", acquired)
	if len(waits) > 0 {
		fmt.Fprintf(w, "  wait for the lock     median %s, max %s\n",
			waits[len(waits)/2].Round(time.Millisecond), waits[len(waits)-1].Round(time.Millisecond))
	}
	fmt.Fprintf(w, "  handoffs              %d (the lock passed to another worker)\n", stats.handoffs.Load())
	fmt.Fprintf(w, "  most holders at once  %d\n", stats.maxInside.Load())
	fmt.Fprintf(w, "  counter               %d after %d accepted writes\n", counter, writes)
	fmt.Fprintf(w, "  fencing tokens        %d accepted, first %d, last %d; %d refused as stale\n", writes, first, last, stale)
	if n := stats.errors.Load(); n > 0 {
		fmt.Fprintf(w, "  failed acquisitions   %d, the last: %v\n", n, lastErr)
	}
	if n := stats.late.Load(); n > 0 {
		fmt.Fprintf(w, "  writes given up       %d (the lock's validity had ended)\n", n)
	}
	fmt.Fprintln(w)

	ok := true
	check := func(pass bool, format string, args ...any) {
		verdict := "PASS"
		if !pass {
			verdict, ok = "FAIL", false
		}
		fmt.Fprintf(w, "%s  %s\n", verdict, fmt.Sprintf(format, args...))
	}
	check(acquired > 0, "the lock was acquired (%d times)", acquired)
	check(stats.maxInside.Load() <= 1, "at most one holder at a time (most seen at once: %d)", stats.maxInside.Load())
	check(int64(writes) == int64(counter), "no lost updates (counter %d, writes %d, lost %d)", counter, writes, writes-counter)
	check(stale == 0, "fencing tokens strictly increasing (%d writes, %d out of order)", writes+stale, stale)
	return ok
}

// uniformRetry waits a uniformly random time in [min, max] before every
// retry: the demo's workers retry often and never give up.
type uniformRetry struct{ min, max time.Duration }

// NextDelay implements redlock.RetryStrategy.
func (u uniformRetry) NextDelay(int) (time.Duration, bool) {
	return u.min + rand.N(u.max-u.min+1), true
}
