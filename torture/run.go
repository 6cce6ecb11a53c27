package torture

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/torture/check"
	"github.com/redlock-go/redlock/torture/cluster"
	"github.com/redlock-go/redlock/torture/faults"
	"github.com/redlock-go/redlock/torture/history"
	"github.com/redlock-go/redlock/torture/scenario"
	"github.com/redlock-go/redlock/torture/traffic"
)

const (
	// setupTimeout bounds starting the nodes, proxies and register.
	setupTimeout = 30 * time.Second
	// progressEvery is how often Run reports progress.
	progressEvery = 100 * time.Millisecond
	// lockKey is the lock every worker contends for.
	lockKey = "torture:register"
)

// Verdict is how a scenario's outcome compares with its expectation.
type Verdict string

// The verdicts. Only Pass is a success.
const (
	// Pass: the checkers found what the scenario expects.
	Pass Verdict = "PASS"
	// Fail: they did not (violations of safety where none were expected,
	// or none where some were), or a waiter waited past the scenario's
	// bound on waiting.
	Fail Verdict = "FAIL"
	// Error: the scenario could not run, or its result cannot be trusted.
	Error Verdict = "ERROR"
)

// Options configures Run.
type Options struct {
	// Duration overrides the scenario's duration when positive.
	Duration time.Duration
	// Seed seeds every random choice of workers and faults.
	Seed uint64
	// Dir receives the history as <scenario>.jsonl; "" keeps it in memory
	// only.
	Dir string
	// Executable is the program to run as workers; "" means the running
	// executable (see traffic.RunIfWorker).
	Executable string
	// Progress, if not nil, is called from time to time with the fraction
	// of the run done.
	Progress func(done float64)
}

// Outcome is the result of running one scenario.
type Outcome struct {
	Scenario scenario.Scenario
	Seed     uint64
	// Result is what the checkers found.
	Result check.Result
	// Judged is the number of violations in the checkers of safety that
	// decide the verdict.
	Judged int
	// Starved is the number of liveness violations: waits past the
	// scenario's bound, and a share served below its least. Any fails the
	// scenario, whatever it expects of the checkers of safety.
	Starved int
	Verdict Verdict
	// Err says why the verdict is Error.
	Err error
	// Start and End delimit the run on the monotonic clock.
	Start, End int64
	// Events is the history, sorted by time.
	Events []history.Event
	// HistoryFile is where the history was written, if anywhere.
	HistoryFile string
	// Elapsed is the wall time the scenario took, set-up and checks
	// included.
	Elapsed time.Duration
	// Runs is how many runs RunUntilCaught made, this one the last; 0
	// from Run.
	Runs int
}

// Run runs one scenario: it starts the nodes and proxies, the register and
// the workers, injects the scenario's faults for its duration, stops
// everything, checks the history and compares the verdict with the
// expectation. It blocks for the scenario's duration plus a few seconds.
// Problems that prevent a trustworthy verdict give Verdict Error.
func Run(ctx context.Context, sc scenario.Scenario, opts Options) *Outcome {
	began := time.Now()
	sc = sc.WithDefaults()
	if opts.Duration > 0 {
		sc.Duration = opts.Duration
	}
	out := &Outcome{Scenario: sc, Seed: opts.Seed}
	err := run(ctx, sc, opts, out)
	out.Elapsed = time.Since(began)
	if err != nil {
		out.Verdict, out.Err = Error, err
		return out
	}
	out.Judged = out.Result.Total(sc.Judged())
	out.Starved = out.Result.Count(check.Liveness)
	switch {
	case out.Result.Unknown > 0:
		out.Verdict, out.Err = Error, fmt.Errorf("%d history segments could not be checked for linearizability in time", out.Result.Unknown)
	case out.Starved > 0:
		// No grant at all is then the liveness failure itself.
		out.Verdict = Fail
	case out.Result.Grants == 0:
		out.Verdict, out.Err = Error, errors.New("no lock was granted: the scenario tested nothing")
	case (sc.Expect == scenario.Hold) == (out.Judged == 0) && out.Starved == 0:
		out.Verdict = Pass
	default:
		out.Verdict = Fail
	}
	return out
}

// run does the work of Run, filling in out.
func run(ctx context.Context, sc scenario.Scenario, opts Options, out *Outcome) (err error) {
	exe, err := executable(opts.Executable)
	if err != nil {
		return err
	}
	rec, closeHistory, err := newRecorder(opts.Dir, sc.Name, out)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeHistory()) }()

	setupCtx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	tmp, err := os.MkdirTemp("", "torture-")
	if err != nil {
		return fmt.Errorf("torture: %w", err)
	}
	defer os.RemoveAll(tmp)
	env := &faults.Env{Rec: rec, TTL: sc.TTL, Key: sc.Key(lockKey)}
	if err := startCluster(setupCtx, sc, tmp, env); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Cluster.Close()) }()
	if err := readyCluster(setupCtx, sc, env); err != nil {
		return err
	}
	if env.Register, err = traffic.StartRegister(sc.Register, rec); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Register.Close()) }()

	fs := sc.Faults()
	if err := prepareFaults(setupCtx, env, fs); err != nil {
		return err
	}
	out.Start = history.Now()
	stopWorkers, err := spawnWorkers(exe, sc, opts.Seed, env)
	if err != nil {
		return err
	}
	if err := awaitWorkers(setupCtx, env.Workers); err != nil {
		return errors.Join(err, stopWorkers())
	}
	faultErr := runFaults(ctx, sc, opts, env, fs)
	err = errors.Join(faultErr, stopWorkers())
	out.End = history.Now()
	out.Events = rec.Events()
	history.Sort(out.Events)
	out.Result = check.Check(out.Events, out.Start, sc.Liveness())
	return err
}

// executable returns exe, or the running executable when exe is "".
func executable(exe string) (string, error) {
	if exe != "" {
		return exe, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("torture: find own executable: %w", err)
	}
	return exe, nil
}

// startCluster starts the nodes and proxies of sc into env.Cluster, built
// with the clock shim in tmp (set as env.Clock) when sc asks for it. The
// caller closes env.Cluster when startCluster succeeds.
func startCluster(ctx context.Context, sc scenario.Scenario, tmp string, env *faults.Env) (err error) {
	copts := cluster.Options{Workers: sc.Workers, AppendFsyncAlways: sc.AppendFsyncAlways, Replicas: sc.Replicas,
		RedisCluster: sc.RedisCluster, Sentinel: sc.Sentinel}
	if sc.AppendFsyncEverysec {
		copts.Config = []string{"appendonly yes", "appendfsync everysec"}
	}
	if sc.ClockShim {
		if env.Clock, err = faults.BuildClockShim(ctx, tmp, "redis-server"); err != nil {
			return err
		}
		copts.ServerPath = env.Clock.ServerPath()
	}
	env.Cluster, err = cluster.New(ctx, copts)
	return err
}

// readyCluster makes the started nodes fit for the run: it proves that the
// clock shim, if any, moves their clocks, and marks them ready unless sc
// runs without the restart quarantine.
func readyCluster(ctx context.Context, sc scenario.Scenario, env *faults.Env) error {
	if env.Clock != nil {
		if err := checkShim(ctx, env); err != nil {
			return err
		}
	}
	if !sc.DisableQuarantine {
		if err := markReady(ctx, env.Cluster, sc.TTL); err != nil {
			return err
		}
	}
	return nil
}

// prepareFaults lets each of fs that needs it prepare before the workers
// start.
func prepareFaults(ctx context.Context, env *faults.Env, fs []faults.Fault) error {
	for _, f := range fs {
		if p, ok := f.(faults.Preparer); ok {
			if err := p.Prepare(ctx, env); err != nil {
				return fmt.Errorf("torture: prepare %s: %w", f.Name(), err)
			}
		}
	}
	return nil
}

// newRecorder returns a recorder writing to <dir>/<name>.jsonl, or to
// memory only when dir is "".
func newRecorder(dir, name string, out *Outcome) (*history.Recorder, func() error, error) {
	if dir == "" {
		return history.NewRecorder(nil), func() error { return nil }, nil
	}
	path := filepath.Join(dir, FileName(name)+".jsonl")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("torture: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("torture: %w", err)
	}
	out.HistoryFile = path
	rec := history.NewRecorder(f)
	return rec, func() error { return errors.Join(rec.Flush(), f.Close()) }, nil
}

// FileName turns a scenario name into a file name ("a/b" → "a-b").
func FileName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if c == '/' || c == ' ' {
			b[i] = '-'
		}
	}
	return string(b)
}

// checkShim proves that the clock shim moves a node's clock, with Redis's
// own TIME, before the run relies on it.
func checkShim(ctx context.Context, env *faults.Env) error {
	node := env.Cluster.Node(0)
	if err := env.Clock.Jump(node, time.Hour); err != nil {
		return err
	}
	err := env.Clock.CheckClock(ctx, node)
	if err := errors.Join(err, env.Clock.Jump(node, -time.Hour)); err != nil {
		return err
	}
	return env.Clock.CheckClock(ctx, node)
}

// markReady declares the brand-new nodes ready, as an operator does once for
// a new deployment, so that the quarantine applies only to restarts.
func markReady(ctx context.Context, c *cluster.Cluster, ttl time.Duration) error {
	client, err := goredis.Dial(ctx, c.DirectURLs(), &redlock.Options{TTL: ttl, RecoveryDelay: ttl})
	if err != nil {
		return fmt.Errorf("torture: %w", err)
	}
	defer client.Close()
	if err := client.MarkReady(ctx, false); err != nil {
		return fmt.Errorf("torture: %w", err)
	}
	return nil
}

// spawnWorkers starts the workers and returns a function that stops them.
func spawnWorkers(exe string, sc scenario.Scenario, seed uint64, env *faults.Env) (stop func() error, err error) {
	stop = func() error {
		errs := make([]error, len(env.Workers))
		var wg sync.WaitGroup
		for i, w := range env.Workers {
			wg.Go(func() { errs[i] = w.Stop() })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	for i := range sc.Workers {
		cfg := traffic.Config{
			Name:              fmt.Sprintf("worker-%d", i),
			Nodes:             env.Cluster.WorkerURLs(i),
			Register:          env.Register.URL(),
			Key:               lockKey,
			Limit:             sc.Limit,
			Shared:            sc.Shared(i),
			Names:             sc.Names(i, lockKey),
			Pick:              sc.Pick,
			SharedGoroutines:  sc.ReaderGoroutines,
			TTL:               sc.TTL,
			RecoveryDelay:     sc.TTL + sc.LockDelay,
			DisableQuarantine: sc.DisableQuarantine,
			WaitReplicas:      sc.WaitReplicas,
			ThinkMin:          sc.ThinkMin,
			ThinkMax:          sc.ThinkMax,
			RetryMin:          scenario.DefaultRetryMin,
			RetryMax:          scenario.DefaultRetryMax,
			RetryPause:        sc.RetryPause,
			Rueidis:           sc.Rueidis,
			HoldMargin:        sc.HoldMargin,
			Seed:              derive(seed, sc.Name, i),
			Goroutines:        sc.Goroutines,
			Wait:              sc.Wait,
			WaitFor:           sc.WaitFor(),
			Renew:             sc.Renew,
			Elect:             sc.Elect,
			Observe:           sc.Observe,
			LockDelay:         sc.LockDelay,
		}
		w, err := traffic.Spawn(exe, cfg, env.Rec)
		if err != nil {
			return nil, errors.Join(err, stop())
		}
		env.Workers = append(env.Workers, w)
	}
	return stop, nil
}

// awaitWorkers waits until every worker is ready to begin its first cycle,
// so that the scenario's duration, and its faults, begin with the traffic:
// a loaded machine may take seconds to start a worker's process. It fails
// when a worker exits first, or ctx ends.
func awaitWorkers(ctx context.Context, workers []*traffic.Worker) error {
	for _, w := range workers {
		select {
		case <-w.Ready():
		case <-w.Done():
			return fmt.Errorf("torture: %s exited before it was ready", w.Name())
		case <-ctx.Done():
			return fmt.Errorf("torture: %s not ready: %w", w.Name(), ctx.Err())
		}
	}
	return nil
}

// runFaults runs the faults for the scenario's duration, reporting
// progress, and returns once every fault has undone its work.
func runFaults(ctx context.Context, sc scenario.Scenario, opts Options, env *faults.Env, fs []faults.Fault) error {
	fctx, cancel := context.WithTimeout(ctx, sc.Duration)
	defer cancel()
	errs := make([]error, len(fs))
	var wg sync.WaitGroup
	for i, f := range fs {
		rng := rand.New(rand.NewPCG(derive(opts.Seed, sc.Name, 1000+i), 0x6661756c74))
		wg.Go(func() {
			if err := f.Run(fctx, env, rng); err != nil {
				errs[i] = fmt.Errorf("torture: fault %s: %w", f.Name(), err)
			}
		})
	}
	begin := time.Now()
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for fctx.Err() == nil {
		select {
		case <-fctx.Done():
		case <-tick.C:
			if opts.Progress != nil {
				opts.Progress(min(1, float64(time.Since(begin))/float64(sc.Duration)))
			}
		}
	}
	wg.Wait()
	if ctx.Err() != nil {
		errs = append(errs, fmt.Errorf("torture: interrupted: %w", ctx.Err()))
	}
	return errors.Join(errs...)
}

// derive returns the seed of one random stream of a scenario.
func derive(seed uint64, name string, stream int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%d", seed, name, stream)
	return h.Sum64()
}
