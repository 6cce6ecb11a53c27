package traffic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/rueidis"
	"github.com/redlock-go/redlock/torture/history"
)

// RunIfWorker runs a worker and exits the process when EnvWorker is set, and
// returns at once otherwise. Call it first thing in main, and in TestMain of
// tests that spawn workers, so that the executable can host its own workers.
// The worker stops after its current cycle when its standard input closes.
func RunIfWorker() {
	raw, ok := os.LookupEnv(EnvWorker)
	if !ok {
		return
	}
	os.Exit(workerMain(raw))
}

// workerMain runs the worker configured by raw and returns its exit code.
func workerMain(raw string) int {
	cfg, err := decodeConfig(raw)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	if err := run(ctx, cfg, os.Stdout, func() error {
		_, err := io.WriteString(os.Stdout, readyLine+"\n")
		return err
	}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// newConn returns the Conn to the node at url over cfg's adapter.
func newConn(cfg Config, url string) (redlock.Conn, error) {
	if cfg.Rueidis {
		return rueidis.NewURL(url)
	}
	return goredis.NewURL(url)
}

// Run runs the worker loop of cfg until ctx ends, writing its history events
// to out as JSON lines. It finishes the cycle in progress when ctx ends
// (releasing a lock it holds), so that the history ends without operations
// left open. It blocks.
func Run(ctx context.Context, cfg Config, out io.Writer) error {
	return run(ctx, cfg, out, nil)
}

// readyLine is the line a worker process writes on its standard output,
// before any history event, once its client is made: Spawn's Ready.
const readyLine = "ready"

// run is Run, calling ready, when not nil, once the client is made and
// before the first cycle.
func run(ctx context.Context, cfg Config, out io.Writer, ready func() error) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	conns := make([]redlock.Conn, len(cfg.Nodes))
	for i, u := range cfg.Nodes {
		c, err := newConn(cfg, u)
		if err != nil {
			for _, c := range conns[:i] {
				c.Close()
			}
			return err
		}
		conns[i] = c
	}
	client, err := redlock.New(conns, &redlock.Options{
		TTL:               cfg.TTL,
		NodeTimeout:       cfg.NodeTimeout,
		DriftFactor:       cfg.DriftFactor,
		RecoveryDelay:     cfg.RecoveryDelay,
		DisableQuarantine: cfg.DisableQuarantine,
		WaitReplicas:      cfg.WaitReplicas,
		Retry:             cfg.retry(),
	})
	if err != nil {
		for _, c := range conns {
			c.Close()
		}
		return fmt.Errorf("traffic: %s: %w", cfg.Name, err)
	}
	defer client.Close()
	if ready != nil {
		if err := ready(); err != nil {
			return fmt.Errorf("traffic: %s: %w", cfg.Name, err)
		}
	}
	loops := max(cfg.Goroutines, 1)
	shared := &lockedWriter{w: out}
	errs := make([]error, loops)
	var wg sync.WaitGroup
	for g := range loops {
		gcfg := cfg
		if cfg.Goroutines > 1 {
			gcfg.Name = fmt.Sprintf("%s.%d", cfg.Name, g)
		}
		if cfg.SharedGoroutines > 0 {
			gcfg.Shared = g >= loops-cfg.SharedGoroutines
		}
		w := &worker{
			cfg:    gcfg,
			client: client,
			reg:    newRegisterClient(cfg.Register),
			rng:    rand.New(rand.NewPCG(cfg.Seed, 0x746f7274+uint64(g))),
			enc:    json.NewEncoder(shared),
		}
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := w.cycle(); err != nil {
					errs[g] = err
					return
				}
			}
		})
	}
	observer := &worker{cfg: cfg, enc: json.NewEncoder(shared)}
	observer.cfg.Name = cfg.Name + ".observer"
	observed := observing(ctx, client, cfg, observer)
	wg.Wait()
	return errors.Join(append(errs, observed())...)
}

// lockedWriter lets the goroutines of a worker write whole history lines to
// one output.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// worker is the state of one worker loop.
type worker struct {
	cfg    Config
	client *redlock.Client
	reg    *registerClient
	rng    *rand.Rand
	enc    *json.Encoder
	lastID int64
	// names are the names of the acquisition under way: Names, or the
	// ones picked from them (Config.Pick).
	names []string
	// election is the worker's candidacy with Elect, made at its first
	// campaign.
	election *redlock.Election
}

// emit writes ev to the history, stamped with the worker's name and, unless
// set, the current time.
func (w *worker) emit(ev history.Event) error {
	if ev.Time == 0 {
		ev.Time = history.Now()
	}
	ev.Process = w.cfg.Name
	if err := w.enc.Encode(ev); err != nil {
		return fmt.Errorf("traffic: %s: write history: %w", w.cfg.Name, err)
	}
	return nil
}

// invoke records the start of an operation and returns its id.
func (w *worker) invoke(ev history.Event) (int64, error) {
	w.lastID++
	ev.ID, ev.Type = w.lastID, history.Invoke
	return ev.ID, w.emit(ev)
}

// cycle runs one acquire attempt and, if it is granted, the critical
// section and the release. Operations run to completion whatever happens to
// the run's context: the worker stops between cycles. Only a failure to
// write the history ends the loop.
func (w *worker) cycle() error {
	ctx := context.Background()
	w.names = w.pick()
	id, err := w.invoke(w.attempt())
	if err != nil {
		return err
	}
	h, err := w.acquire(ctx)
	now := history.Now()
	if err != nil {
		return w.refused(id, now, err)
	}
	if err := w.emit(w.granted(id, now, h)); err != nil {
		return err
	}
	if err := w.critical(ctx, h); err != nil {
		return err
	}
	if w.cfg.HoldMargin > 0 {
		time.Sleep(time.Until(h.Until().Add(-w.cfg.HoldMargin)))
	}
	held := time.Duration(history.Now() - now)
	if err := w.release(ctx, h); err != nil {
		return err
	}
	time.Sleep(w.rest(held))
	return nil
}

// rest returns the pause after a release of a hold that lasted held: up to
// RetryMax, or for a reader a think time (between ThinkMin and ThinkMax),
// or as long as it held when it holds to the end of its validity
// (HoldMargin). Readers hold the name together: readers that each hold for
// long and take it again at once hold it in turn without a break, and a
// writer that makes one attempt at a time never gets it. Resting as long
// as they read, or held, they leave it free at times.
func (w *worker) rest(held time.Duration) time.Duration {
	switch {
	case !w.cfg.Shared:
		return w.between(0, w.cfg.RetryMax)
	case w.cfg.HoldMargin > 0:
		return max(held, w.between(w.cfg.ThinkMin, w.cfg.ThinkMax))
	}
	return w.between(w.cfg.ThinkMin, w.cfg.ThinkMax)
}

// refused records the failure of attempt id at now, and pauses before the
// next.
func (w *worker) refused(id, now int64, err error) error {
	ev := w.attempt()
	ev.Time, ev.Type, ev.ID, ev.Err, ev.Limit, ev.Shared = now, history.Fail, id, err.Error(), 0, false
	var qe *redlock.QuorumError
	if errors.As(err, &qe) {
		ev.Nodes = nodeOutcomes(qe.Nodes)
	}
	if err := w.emit(ev); err != nil {
		return err
	}
	time.Sleep(w.between(w.cfg.RetryMin, w.cfg.RetryMax))
	return nil
}

// critical reads the register that each key held guards (the lock's, the
// permit's, or each of a set's), thinks, and, unless the worker is a
// reader, writes each the value read plus one, sending the key's fencing
// token with every request. It writes nothing once a read failed, and a
// renewing worker nothing once it lost a lock.
func (w *worker) critical(ctx context.Context, h *held) error {
	reads := make([]registerReply, len(h.locks))
	for i, lock := range h.locks {
		r, ok, err := w.read(ctx, lock)
		if err != nil || !ok {
			return err
		}
		reads[i] = r
	}
	if !w.think(h) || w.cfg.Shared {
		return nil
	}
	for i, lock := range h.locks {
		if err := w.write(ctx, lock, reads[i]); err != nil {
			return err
		}
	}
	return nil
}

// read reads the register that lock's key guards, and reports whether the
// register answered.
func (w *worker) read(ctx context.Context, lock *redlock.Lock) (registerReply, bool, error) {
	fence, reg := lock.Fence(), lock.Key()
	id, err := w.invoke(history.Event{Op: history.OpRead, Key: reg, Fence: fence})
	if err != nil {
		return registerReply{}, false, err
	}
	read := w.reg.read
	if w.cfg.Shared {
		read = w.reg.readShared
	}
	r, err := read(ctx, w.cfg.Name, reg, fence)
	if err != nil {
		return r, false, w.emit(history.Event{Type: failType(err), Op: history.OpRead, ID: id, Key: reg, Fence: fence, Err: err.Error()})
	}
	return r, true, w.emit(history.Event{Type: history.OK, Op: history.OpRead, ID: id, Key: reg, Fence: fence, Value: r.Value, Version: r.Version})
}

// write writes the value of r plus one to the register that lock's key
// guards.
func (w *worker) write(ctx context.Context, lock *redlock.Lock, r registerReply) error {
	fence, reg := lock.Fence(), lock.Key()
	value := r.Value + 1
	wr := history.Event{Op: history.OpWrite, Key: reg, Fence: fence, Value: value, BasedOn: r.Version}
	var err error
	if wr.ID, err = w.invoke(wr); err != nil {
		return err
	}
	wr.Version, err = w.reg.write(ctx, w.cfg.Name, reg, fence, value, r.Version)
	wr.Type = history.OK
	if err != nil {
		wr.Type, wr.Version, wr.Err = failType(err), 0, err.Error()
	}
	return w.emit(wr)
}

// think waits a random time between ThinkMin and ThinkMax, and reports
// whether the worker may still write. A renewing worker stops waiting when
// its lock's, or set's, Done closes, and may write only while Err reports
// it held; Err checks the deadline itself, so a worker that was stopped
// past it does not write before the timer behind Done fires.
func (w *worker) think(h *held) bool {
	d := w.between(w.cfg.ThinkMin, w.cfg.ThinkMax)
	if !w.cfg.Renew {
		time.Sleep(d)
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-h.Done():
	}
	return h.Err() == nil
}

// libraryTTL is the library's default TTL (redlock.Options.TTL), in force
// when the config leaves TTL zero.
const libraryTTL = 10 * time.Second

// ttl returns the lock TTL in force.
func (c Config) ttl() time.Duration {
	if c.TTL > 0 {
		return c.TTL
	}
	return libraryTTL
}

// pick returns the names of the next acquisition: Names, or Pick of them
// at random, in random order.
func (w *worker) pick() []string {
	if w.cfg.Pick == 0 {
		return w.cfg.Names
	}
	names := make([]string, w.cfg.Pick)
	for i, j := range w.rng.Perm(len(w.cfg.Names))[:w.cfg.Pick] {
		names[i] = w.cfg.Names[j]
	}
	return names
}

// waitFor returns how long a waiting acquisition waits: WaitFor, or four
// TTLs.
func (c Config) waitFor() time.Duration {
	if c.WaitFor > 0 {
		return c.WaitFor
	}
	return 4 * c.ttl()
}

// between returns a uniformly random duration in [lo, hi].
func (w *worker) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(w.rng.Int64N(int64(hi-lo)+1))
}

// failType is Fail for a request the register refused, and Info when the
// register may or may not have applied it.
func failType(err error) history.Type {
	if errors.Is(err, ErrStale) {
		return history.Fail
	}
	return history.Info
}

// nodeOutcomes converts the library's per-node results.
func nodeOutcomes(results []redlock.NodeResult) []history.NodeOutcome {
	out := make([]history.NodeOutcome, len(results))
	for i, r := range results {
		out[i] = history.NodeOutcome{Node: i, Outcome: r.Outcome.String(), Micros: r.Latency.Microseconds()}
	}
	return out
}
