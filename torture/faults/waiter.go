package faults

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/redlock-go/redlock/torture/history"
	"github.com/redlock-go/redlock/torture/traffic"
)

// KindKillWaiter is the kind KillFirstWaiter records (history.Fault.Kind).
const KindKillWaiter = "kill-waiter"

// KillFirstWaiter kills with SIGKILL, Every from the start and from one
// kill to the next, the live workers whose acquisitions under way began
// first (Together of them, one when 0), while more than Together+1 workers
// live: the first in the nodes' queue of waiting clients. Their places
// there stay for as long as a place lasts unrenewed (2 s), or until a few
// node timeouts after a release names them, and the releases name them
// first: the waiters behind them must not wait for them all that time.
type KillFirstWaiter struct {
	// Every is the time before the first kill and between two.
	Every time.Duration
	// Together is how many of the workers waiting longest each kill
	// kills at once; one when 0.
	Together int
}

// Name describes the fault.
func (f KillFirstWaiter) Name() string {
	if f.Together > 1 {
		return fmt.Sprintf("SIGKILL the %d workers waiting longest every %v", f.Together, f.Every)
	}
	return fmt.Sprintf("SIGKILL the worker waiting longest every %v", f.Every)
}

// Run implements Fault.
func (f KillFirstWaiter) Run(ctx context.Context, env *Env, _ *rand.Rand) error {
	for sleep(ctx, f.Every) {
		// A worker's events reach the history through a pipe: one granted
		// a moment ago may still look waiting, and the kill then strands
		// a permit until its TTL. One that has waited a while is more
		// likely still first in line.
		for _, w := range firstWaiters(env, leastWaited, max(f.Together, 1)) {
			env.instant(KindKillWaiter, w.Name(), "SIGKILL while waiting first in line")
			if err := w.Kill(); err != nil && ctx.Err() == nil {
				return err
			}
		}
	}
	return nil
}

// leastWaited is how long the worker KillFirstWaiter kills has waited at
// least, by the history.
const leastWaited = 30 * time.Millisecond

// firstWaiters returns the n live workers whose acquisitions under way
// began first, by the history so far, if each began least ago or earlier;
// none when no more than n+1 workers live or fewer than n wait so.
func firstWaiters(env *Env, least time.Duration, n int) []*traffic.Worker {
	byName := map[string]*traffic.Worker{}
	for _, w := range env.Workers {
		if !w.Exited() {
			byName[w.Name()] = w
		}
	}
	if len(byName) <= n+1 {
		return nil
	}
	type call struct {
		id    int64
		since int64
	}
	waiting := map[string]call{}
	for _, ev := range env.Rec.Events() {
		if ev.Op != history.OpAcquire || byName[ev.Process] == nil {
			continue
		}
		if ev.Type == history.Invoke {
			waiting[ev.Process] = call{ev.ID, ev.Time}
		} else if c, ok := waiting[ev.Process]; ok && c.id == ev.ID {
			delete(waiting, ev.Process)
		}
	}
	names := make([]string, 0, len(waiting))
	for name, c := range waiting {
		if history.Now()-c.since >= int64(least) {
			names = append(names, name)
		}
	}
	if len(names) < n {
		return nil
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(waiting[a].since, waiting[b].since) })
	first := make([]*traffic.Worker, n)
	for i, name := range names[:n] {
		first[i] = byName[name]
	}
	return first
}
