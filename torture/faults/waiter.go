package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redlock-go/redlock/torture/history"
	"github.com/redlock-go/redlock/torture/traffic"
)

// KindKillWaiter is the kind KillFirstWaiter records (history.Fault.Kind).
const KindKillWaiter = "kill-waiter"

// KillFirstWaiter kills with SIGKILL, Every from the start and from one
// kill to the next, the live worker whose acquisition under way began
// first, while more than two workers live: the first in the nodes' queue
// of waiting clients. Its place there stays for as long as a place lasts
// unrenewed (2 s), and the releases keep naming it first: the waiters
// behind it must not wait for it all that time.
type KillFirstWaiter struct {
	// Every is the time before the first kill and between two.
	Every time.Duration
}

// Name describes the fault.
func (f KillFirstWaiter) Name() string {
	return fmt.Sprintf("SIGKILL the worker waiting longest every %v", f.Every)
}

// Run implements Fault.
func (f KillFirstWaiter) Run(ctx context.Context, env *Env, _ *rand.Rand) error {
	for sleep(ctx, f.Every) {
		// A worker's events reach the history through a pipe: one granted
		// a moment ago may still look waiting, and the kill then strands
		// a permit until its TTL. One that has waited a while is more
		// likely still first in line.
		w := firstWaiter(env, leastWaited)
		if w == nil {
			continue
		}
		env.instant(KindKillWaiter, w.Name(), "SIGKILL while waiting first in line")
		if err := w.Kill(); err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}

// leastWaited is how long the worker KillFirstWaiter kills has waited at
// least, by the history.
const leastWaited = 30 * time.Millisecond

// firstWaiter returns the live worker whose acquisition under way began
// first, by the history so far, if it began least ago or earlier; nil
// when no more than two workers live or none waits.
func firstWaiter(env *Env, least time.Duration) *traffic.Worker {
	byName := map[string]*traffic.Worker{}
	for _, w := range env.Workers {
		if !w.Exited() {
			byName[w.Name()] = w
		}
	}
	if len(byName) <= 2 {
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
	var first *traffic.Worker
	var since int64
	for name, c := range waiting {
		if first == nil || c.since < since {
			first, since = byName[name], c.since
		}
	}
	if first == nil || history.Now()-since < int64(least) {
		return nil
	}
	return first
}
