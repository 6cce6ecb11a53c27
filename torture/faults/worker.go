package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redlock-go/redlock/torture/history"
)

// PauseWorkerAtRead stops one worker with SIGSTOP the moment the register
// serves its read, that is inside its critical section between the read
// and the write, and continues it after Pause, longer than the lock's
// validity. When it resumes, it writes a value computed from a read that
// other holders have since overwritten: an unfenced register loses their
// updates, a fenced one refuses the late write.
type PauseWorkerAtRead struct {
	// Worker is the index of the worker to pause.
	Worker int
	// Pause is how long it stays stopped; 0 means twice the TTL.
	Pause time.Duration
	// Cooldown is the least time from one resume to the next pause.
	Cooldown time.Duration
}

// Name describes the fault.
func (f PauseWorkerAtRead) Name() string {
	return fmt.Sprintf("SIGSTOP worker-%d at its read, past its validity", f.Worker)
}

// Run implements Fault.
func (f PauseWorkerAtRead) Run(ctx context.Context, env *Env, _ *rand.Rand) error {
	w := env.Workers[f.Worker]
	pause := f.Pause
	if pause == 0 {
		pause = 2 * env.TTL
	}
	return atRead(ctx, env, f.Worker, f.Cooldown, func() (func() error, error) {
		if err := w.Pause(); err != nil {
			return nil, err
		}
		id := env.start("pause-worker", w.Name(), fmt.Sprintf("SIGSTOP for %v at its read", pause))
		return func() error {
			sleep(ctx, pause)
			err := w.Resume()
			env.end(id, "pause-worker", w.Name())
			return err
		}, nil
	})
}

// IsolateWorkerAtRead blackholes every link of one worker, to every node,
// the moment the register serves its read, inside its critical section,
// for Dur, then heals them: its renewals time out, and it must learn from
// its own clock that it lost the lock before anyone else can take it.
type IsolateWorkerAtRead struct {
	// Worker is the index of the worker to isolate.
	Worker int
	// Dur is how long it stays cut off; 0 means twice the TTL.
	Dur time.Duration
	// Cooldown is the least time from one heal to the next isolation.
	Cooldown time.Duration
}

// Name describes the fault.
func (f IsolateWorkerAtRead) Name() string {
	return fmt.Sprintf("blackhole every link of worker-%d at its read", f.Worker)
}

// Run implements Fault.
func (f IsolateWorkerAtRead) Run(ctx context.Context, env *Env, _ *rand.Rand) error {
	dur := f.Dur
	if dur == 0 {
		dur = 2 * env.TTL
	}
	target := env.Workers[f.Worker].Name()
	return atRead(ctx, env, f.Worker, f.Cooldown, func() (func() error, error) {
		var errs []error
		for n := range env.Cluster.Nodes() {
			errs = append(errs, env.Cluster.Link(f.Worker, n).Hold())
		}
		id := env.start("isolate-worker", target, fmt.Sprintf("every link blackholed for %v at its read", dur))
		return func() error {
			sleep(ctx, dur)
			for n := range env.Cluster.Nodes() {
				errs = append(errs, env.Cluster.Link(f.Worker, n).Heal())
			}
			env.end(id, "isolate-worker", target)
			return errors.Join(errs...)
		}, nil
	})
}

// KillWorkerAtRead kills one worker with SIGKILL the moment the register
// serves its read, inside its critical section, once: it holds the lock
// (or leads) and never releases it, nor renews it, nor writes; the others
// get it once it expires.
type KillWorkerAtRead struct {
	// Worker is the index of the worker to kill.
	Worker int
}

// Name describes the fault.
func (f KillWorkerAtRead) Name() string {
	return fmt.Sprintf("SIGKILL worker-%d at its read", f.Worker)
}

// Run implements Fault.
func (f KillWorkerAtRead) Run(ctx context.Context, env *Env, _ *rand.Rand) error {
	w := env.Workers[f.Worker]
	killed := false
	return atRead(ctx, env, f.Worker, 0, func() (func() error, error) {
		if killed {
			return func() error { return nil }, nil
		}
		killed = true
		err := w.Kill()
		env.instant("kill-worker", w.Name(), "SIGKILL at its read")
		return func() error { return nil }, err
	})
}

// atRead runs act the moment the register serves a read of worker i, at
// most once at a time and no sooner than cooldown after the last undo
// returned, until ctx ends; act starts the fault and returns its undo,
// which runs in the background and ends it. It returns once every undo
// returned, with their errors.
func atRead(ctx context.Context, env *Env, i int, cooldown time.Duration, act func() (undo func() error, err error)) error {
	w := env.Workers[i]
	return atReads(ctx, env, cooldown, func(name string) (func() error, error) {
		if name != w.Name() {
			return nil, nil
		}
		return act()
	})
}

// atReads is atRead for the reads of every worker: act, given the name of
// the worker whose read the register serves, returns a nil undo when it
// started no fault.
func atReads(ctx context.Context, env *Env, cooldown time.Duration, act func(name string) (undo func() error, err error)) error {
	var (
		mu      sync.Mutex
		stopped bool // set once ctx ends, before wg.Wait: no wg.Go after
		busy    bool
		resumed time.Time
		errs    []error
		wg      sync.WaitGroup
	)
	env.Register.OnRead(func(name string) {
		mu.Lock()
		defer mu.Unlock()
		if stopped || busy || time.Since(resumed) < cooldown || ctx.Err() != nil {
			return
		}
		undo, err := act(name)
		if err != nil {
			errs = append(errs, err)
		}
		if undo == nil {
			return
		}
		busy = true
		wg.Go(func() {
			err := undo()
			mu.Lock()
			defer mu.Unlock()
			busy, resumed = false, time.Now()
			errs = append(errs, err)
		})
	})
	<-ctx.Done()
	env.Register.OnRead(nil)
	// A read served just before OnRead(nil) may still be calling the hook;
	// once stopped is set under mu, no call of it can start a fault, so
	// wg.Wait does not race with wg.Go.
	mu.Lock()
	stopped = true
	mu.Unlock()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return errors.Join(errs...)
}

// PauseWorkerInAcquire slows one worker's links so that its acquisitions
// take a while, and stops it with SIGSTOP in the middle of one, for longer
// than the TTL. When it resumes, the answers it gets are stale: the
// algorithm must notice from its monotonic clock that no validity is left.
type PauseWorkerInAcquire struct {
	// Worker is the index of the worker to pause.
	Worker int
	// Latency is added each way to the worker's links to every node.
	Latency time.Duration
	// DelayMin and DelayMax bound the time from the start of an
	// acquisition to the pause.
	DelayMin, DelayMax time.Duration
	// Pause is how long the worker stays stopped; 0 means twice the TTL.
	Pause time.Duration
	// Cooldown is the least time from one resume to the next pause.
	Cooldown time.Duration
}

// Name describes the fault.
func (f PauseWorkerInAcquire) Name() string {
	return fmt.Sprintf("SIGSTOP worker-%d during an acquisition (links +%v), past the TTL", f.Worker, f.Latency)
}

// Prepare slows the worker's links.
func (f PauseWorkerInAcquire) Prepare(_ context.Context, env *Env) error {
	for n := range env.Cluster.Nodes() {
		if err := env.Cluster.Link(f.Worker, n).SetLatency(f.Latency, 0); err != nil {
			return err
		}
	}
	return nil
}

// Run implements Fault.
func (f PauseWorkerInAcquire) Run(ctx context.Context, env *Env, rng *rand.Rand) error {
	w := env.Workers[f.Worker]
	pause := f.Pause
	if pause == 0 {
		pause = 2 * env.TTL
	}
	invokes, cancel := env.Rec.Subscribe(func(ev history.Event) bool {
		return w.IsOf(ev.Process) && ev.Type == history.Invoke && ev.Op == history.OpAcquire
	})
	defer cancel()
	var resumed time.Time
	var errs []error
	for {
		select {
		case <-ctx.Done():
			for n := range env.Cluster.Nodes() {
				errs = append(errs, env.Cluster.Link(f.Worker, n).SetLatency(0, 0))
			}
			return errors.Join(errs...)
		case <-invokes:
		}
		if time.Since(resumed) < f.Cooldown {
			continue
		}
		if !sleep(ctx, between(rng, f.DelayMin, f.DelayMax)) {
			continue
		}
		if err := w.Pause(); err != nil {
			errs = append(errs, err)
			continue
		}
		id := env.start("pause-worker", w.Name(), fmt.Sprintf("SIGSTOP for %v during an acquisition", pause))
		sleep(ctx, pause)
		errs = append(errs, w.Resume())
		env.end(id, "pause-worker", w.Name())
		resumed = time.Now()
	}
}
