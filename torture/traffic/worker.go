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

	goredisv9 "github.com/redis/go-redis/v9"

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
	book := &outcomeBook{nodes: len(cfg.Nodes)}
	conns := make([]redlock.Conn, len(cfg.Nodes))
	for i, u := range cfg.Nodes {
		o, err := redlock.ParseURL(u)
		if err != nil {
			return err
		}
		conns[i] = &recordingConn{Conn: goredis.NewOwned(goredisv9.NewClient(o)), node: i, book: book}
	}
	client, err := redlock.New(conns, &redlock.Options{
		TTL:               cfg.TTL,
		NodeTimeout:       cfg.NodeTimeout,
		DriftFactor:       cfg.DriftFactor,
		RecoveryDelay:     cfg.RecoveryDelay,
		DisableQuarantine: cfg.DisableQuarantine,
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
			book:   book,
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
	book   *outcomeBook
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
	id, err := w.invoke(history.Event{Op: history.OpAcquire, Key: key})
	if err != nil {
		return err
	}
	var lock *redlock.Lock
	if w.cfg.Wait {
		waitCtx, cancel := context.WithTimeout(ctx, 4*w.ttl())
		lock, err = w.client.Acquire(waitCtx, key)
		cancel()
	} else {
		lock, err = w.client.TryAcquire(ctx, key)
	}
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
		Time: now, Type: history.OK, Op: history.OpAcquire, ID: id, Key: key,
		Token: lock.Token(), Fence: lock.Fence(), Deadline: deadline, Nodes: w.book.take(lock.Token()),
	}); err != nil {
		return err
	}
	if err := w.critical(ctx, lock.Fence()); err != nil {
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

// critical reads the register, thinks, and writes the value read plus one,
// sending fence with both requests.
func (w *worker) critical(ctx context.Context, fence uint64) error {
	id, err := w.invoke(history.Event{Op: history.OpRead, Fence: fence})
	if err != nil {
		return err
	}
	r, err := w.reg.read(ctx, w.cfg.Name, fence)
	if err != nil {
		return w.emit(history.Event{Type: failType(err), Op: history.OpRead, ID: id, Fence: fence, Err: err.Error()})
	}
	if err := w.emit(history.Event{Type: history.OK, Op: history.OpRead, ID: id, Fence: fence, Value: r.Value, Version: r.Version}); err != nil {
		return err
	}
	time.Sleep(w.between(w.cfg.ThinkMin, w.cfg.ThinkMax))
	value := r.Value + 1
	id, err = w.invoke(history.Event{Op: history.OpWrite, Fence: fence, Value: value, BasedOn: r.Version})
	if err != nil {
		return err
	}
	version, err := w.reg.write(ctx, w.cfg.Name, fence, value, r.Version)
	if err != nil {
		return w.emit(history.Event{Type: failType(err), Op: history.OpWrite, ID: id, Fence: fence, Value: value, BasedOn: r.Version, Err: err.Error()})
	}
	return w.emit(history.Event{Type: history.OK, Op: history.OpWrite, ID: id, Fence: fence, Value: value, BasedOn: r.Version, Version: version})
}

// release releases lock and records the outcome.
func (w *worker) release(ctx context.Context, lock *redlock.Lock) error {
	id, err := w.invoke(history.Event{Op: history.OpRelease, Key: w.cfg.Key, Token: lock.Token()})
	if err != nil {
		return err
	}
	ev := history.Event{Type: history.OK, Op: history.OpRelease, ID: id, Key: w.cfg.Key, Token: lock.Token()}
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

// ttl returns the lock TTL in force.
func (w *worker) ttl() time.Duration { return w.client.Options().TTL }

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

// outcomeBook keeps each node's answer to the current acquisition attempt,
// which the library reports only for attempts that fail.
type outcomeBook struct {
	nodes    int
	mu       sync.Mutex
	attempts map[string][]history.NodeOutcome // by token
}

// maxBookedAttempts bounds the attempts a book remembers: those that failed
// are never taken.
const maxBookedAttempts = 1024

// put records node's answer to the attempt with token.
func (b *outcomeBook) put(token string, node int, outcome string, latency time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	outcomes, ok := b.attempts[token]
	if !ok {
		if b.attempts == nil || len(b.attempts) >= maxBookedAttempts {
			b.attempts = map[string][]history.NodeOutcome{}
		}
		outcomes = make([]history.NodeOutcome, b.nodes)
		for i := range outcomes {
			outcomes[i] = history.NodeOutcome{Node: i, Outcome: redlock.OutcomeNoAnswer.String()}
		}
		b.attempts[token] = outcomes
	}
	outcomes[node] = history.NodeOutcome{Node: node, Outcome: outcome, Micros: latency.Microseconds()}
}

// take returns the answers recorded for the attempt with token: nodes that
// had not answered when the attempt was decided show as "no answer". An
// attempt whose requests went in a batch with others' is not recorded.
func (b *outcomeBook) take(token string) []history.NodeOutcome {
	b.mu.Lock()
	defer b.mu.Unlock()
	outcomes, ok := b.attempts[token]
	if !ok {
		return nil
	}
	delete(b.attempts, token)
	return append([]history.NodeOutcome(nil), outcomes...)
}

// recordingConn notes each node's answer to acquisition requests in a book.
type recordingConn struct {
	redlock.Conn
	node int
	book *outcomeBook
}

// EvalSHA runs the script and, when it is the acquisition script (the lock
// key, its fencing counter and the restart marker as keys; the token as the
// first argument), records the node's answer.
func (c *recordingConn) EvalSHA(ctx context.Context, sha1, source string, keys []string, args ...string) (any, error) {
	start := time.Now()
	v, err := c.Conn.EvalSHA(ctx, sha1, source, keys, args...)
	if len(keys) == 3 && len(args) > 0 && keys[1] == redlock.FenceKey(keys[0]) && keys[2] == redlock.MarkerKey {
		c.book.put(args[0], c.node, acquireOutcome(v, err), time.Since(start))
	}
	return v, err
}

// acquireOutcome names a node's answer to the acquisition script.
func acquireOutcome(v any, err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return redlock.OutcomeTimeout.String()
	case err != nil:
		return redlock.OutcomeError.String()
	}
	if a, ok := v.([]any); ok && len(a) > 0 {
		switch a[0] {
		case int64(1):
			return redlock.OutcomeOK.String()
		case int64(0):
			return redlock.OutcomeHeld.String()
		case int64(2):
			return redlock.OutcomeRecovering.String()
		}
	}
	return fmt.Sprintf("reply %v", v)
}
