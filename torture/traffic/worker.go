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
	if err := Run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// Run runs the worker loop of cfg until ctx ends, writing its history events
// to out as JSON lines. It finishes the cycle in progress when ctx ends
// (releasing a lock it holds), so that the history ends without operations
// left open. It blocks.
func Run(ctx context.Context, cfg Config, out io.Writer) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	conns := make([]redlock.Conn, len(cfg.Nodes))
	for i, u := range cfg.Nodes {
		c, err := goredis.NewURL(u)
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
	})
	if err != nil {
		for _, c := range conns {
			c.Close()
		}
		return fmt.Errorf("traffic: %s: %w", cfg.Name, err)
	}
	defer client.Close()
	loops := max(cfg.Goroutines, 1)
	shared := &lockedWriter{w: out}
	errs := make([]error, loops)
	var wg sync.WaitGroup
	for g := range loops {
		gcfg := cfg
		if cfg.Goroutines > 1 {
			gcfg.Name = fmt.Sprintf("%s.%d", cfg.Name, g)
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
	wg.Wait()
	return errors.Join(errs...)
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
	key := w.cfg.Key
	id, err := w.invoke(history.Event{Op: history.OpAcquire, Key: key, Limit: w.cfg.Limit})
	if err != nil {
		return err
	}
	lock, err := w.acquire(ctx)
	now := history.Now()
	if err != nil {
		ev := history.Event{Time: now, Type: history.Fail, Op: history.OpAcquire, ID: id, Key: key, Err: err.Error()}
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
	deadline := now + int64(time.Until(lock.Until()))
	if err := w.emit(history.Event{
		Time: now, Type: history.OK, Op: history.OpAcquire, ID: id, Key: lock.Key(),
		Token: lock.Token(), Fence: lock.Fence(), Deadline: deadline, Nodes: nodeOutcomes(lock.Nodes()),
	}); err != nil {
		return err
	}
	if err := w.critical(ctx, lock); err != nil {
		return err
	}
	if w.cfg.HoldMargin > 0 {
		time.Sleep(time.Until(lock.Until().Add(-w.cfg.HoldMargin)))
	}
	if err := w.release(ctx, lock); err != nil {
		return err
	}
	time.Sleep(w.between(0, w.cfg.RetryMax))
	return nil
}

// acquire takes the lock, or with Limit one of its permits: one attempt,
// or a wait of up to four TTLs with Wait; renewing in the background with
// Renew.
func (w *worker) acquire(ctx context.Context) (*redlock.Lock, error) {
	var opts []redlock.LockOption
	if w.cfg.Renew {
		opts = append(opts, redlock.WithAutoRenew())
	}
	if w.cfg.Limit > 0 {
		opts = append(opts, redlock.WithLimit(w.cfg.Limit))
	}
	if !w.cfg.Wait {
		return w.client.TryAcquire(ctx, w.cfg.Key, opts...)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 4*w.ttl())
	defer cancel()
	return w.client.Acquire(waitCtx, w.cfg.Key, opts...)
}

// critical reads the register that the key held guards (the lock's, or
// the permit's), thinks, and writes the value read plus one, sending the
// lock's fencing token with both requests. A renewing worker skips the
// write once the lock is lost.
func (w *worker) critical(ctx context.Context, lock *redlock.Lock) error {
	fence, reg := lock.Fence(), lock.Key()
	id, err := w.invoke(history.Event{Op: history.OpRead, Key: reg, Fence: fence})
	if err != nil {
		return err
	}
	r, err := w.reg.read(ctx, w.cfg.Name, reg, fence)
	if err != nil {
		return w.emit(history.Event{Type: failType(err), Op: history.OpRead, ID: id, Key: reg, Fence: fence, Err: err.Error()})
	}
	if err := w.emit(history.Event{Type: history.OK, Op: history.OpRead, ID: id, Key: reg, Fence: fence, Value: r.Value, Version: r.Version}); err != nil {
		return err
	}
	if !w.think(lock) {
		return nil
	}
	value := r.Value + 1
	wr := history.Event{Op: history.OpWrite, Key: reg, Fence: fence, Value: value, BasedOn: r.Version}
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
// its lock's Done closes, and may write only while Err reports the lock
// held; Err checks the deadline itself, so a worker that was stopped past
// it does not write before the timer behind Done fires.
func (w *worker) think(lock *redlock.Lock) bool {
	d := w.between(w.cfg.ThinkMin, w.cfg.ThinkMax)
	if !w.cfg.Renew {
		time.Sleep(d)
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-lock.Done():
	}
	return lock.Err() == nil
}

// release releases lock and records the outcome.
func (w *worker) release(ctx context.Context, lock *redlock.Lock) error {
	inv := history.Event{Op: history.OpRelease, Key: lock.Key(), Token: lock.Token()}
	if w.cfg.Renew {
		inv.Deadline = history.Now() + int64(time.Until(lock.Until()))
	}
	id, err := w.invoke(inv)
	if err != nil {
		return err
	}
	ev := history.Event{Type: history.OK, Op: history.OpRelease, ID: id, Key: lock.Key(), Token: lock.Token()}
	if err := lock.Release(ctx); err != nil {
		// Not held (expired) or not released on a quorum: the checkers
		// use the release's invocation time, so the outcome is
		// informational.
		ev.Type, ev.Err = history.Info, err.Error()
		var qe *redlock.QuorumError
		if errors.As(err, &qe) {
			ev.Nodes = nodeOutcomes(qe.Nodes)
		}
	}
	return w.emit(ev)
}

// libraryTTL is the library's default TTL (redlock.Options.TTL), in force
// when the config leaves TTL zero.
const libraryTTL = 10 * time.Second

// ttl returns the lock TTL in force.
func (w *worker) ttl() time.Duration {
	if w.cfg.TTL > 0 {
		return w.cfg.TTL
	}
	return libraryTTL
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
