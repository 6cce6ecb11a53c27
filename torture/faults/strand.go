package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redlock-go/redlock/torture/traffic"
)

// Kinds of the faults StrandWaiters records (history.Fault.Kind).
const (
	KindKillHolder = "kill-holder"
	KindStopWaiter = "stop-waiter"
)

// StrandWaiters kills the holder of the lock with SIGKILL the moment the
// register serves its read, inside its critical section, and stops every
// other worker but one, the survivor, picked at random, with SIGSTOP for
// Stop. The lock expires unreleased, and the places in the nodes' queue of
// the stopped waiters, the first in line perhaps among them, stop being
// renewed: the survivor must be served once the key expired and their
// places lapsed, not wait for them. It strikes again Every after the last
// resume, while three workers live.
type StrandWaiters struct {
	// Stop is how long the other waiters stay stopped: longer than a place
	// in line lasts unrenewed, so that theirs lapse.
	Stop time.Duration
	// Every is the least time from the start, and from one resume, to the
	// next kill.
	Every time.Duration
}

// Name describes the fault.
func (f StrandWaiters) Name() string {
	return fmt.Sprintf("SIGKILL the holder at its read, SIGSTOP all waiters but one for %v", f.Stop)
}

// Run implements Fault.
func (f StrandWaiters) Run(ctx context.Context, env *Env, rng *rand.Rand) error {
	begun := time.Now()
	return atReads(ctx, env, f.Every, func(name string) (func() error, error) {
		holder, others := split(env.Workers, name)
		if time.Since(begun) < f.Every || holder == nil || len(others) < 2 {
			return nil, nil
		}
		paused, err := f.strand(env, holder, others, rng.IntN(len(others)))
		return func() error {
			sleep(ctx, f.Stop)
			return resume(env, paused)
		}, err
	})
}

// split returns the live worker named name, and the other live workers.
func split(workers []*traffic.Worker, name string) (*traffic.Worker, []*traffic.Worker) {
	var holder *traffic.Worker
	var others []*traffic.Worker
	for _, w := range workers {
		switch {
		case w.Exited():
		case w.Name() == name:
			holder = w
		default:
			others = append(others, w)
		}
	}
	return holder, others
}

// strand kills holder and stops the others but others[survivor], and
// returns the stopped ones with the ids of their faults.
func (f StrandWaiters) strand(env *Env, holder *traffic.Worker, others []*traffic.Worker, survivor int) (map[*traffic.Worker]int64, error) {
	err := holder.Kill()
	env.instant(KindKillHolder, holder.Name(), "SIGKILL at its read")
	paused := map[*traffic.Worker]int64{}
	var errs []error
	for i, w := range others {
		if i == survivor {
			continue
		}
		if perr := w.Pause(); perr != nil {
			errs = append(errs, perr)
			continue
		}
		paused[w] = env.start(KindStopWaiter, w.Name(), fmt.Sprintf("SIGSTOP for %v while %s waits", f.Stop, others[survivor].Name()))
	}
	return paused, errors.Join(append(errs, err)...)
}

// resume continues the workers strand stopped and ends their faults.
func resume(env *Env, paused map[*traffic.Worker]int64) error {
	var errs []error
	for w, id := range paused {
		errs = append(errs, w.Resume())
		env.end(id, KindStopWaiter, w.Name())
	}
	return errors.Join(errs...)
}
