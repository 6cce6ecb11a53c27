package faults

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redlock-go/redlock/torture/cluster"
	"github.com/redlock-go/redlock/torture/history"
	"github.com/redlock-go/redlock/torture/traffic"
)

// Env is what faults act on. The runner fills it in before any fault runs.
type Env struct {
	Cluster  *cluster.Cluster
	Workers  []*traffic.Worker
	Register *traffic.Register
	Rec      *history.Recorder
	// TTL is the lock TTL the workers use.
	TTL time.Duration
	// Key is a lock key the workers take, for faults that pick one before
	// any grant: the lock's, a semaphore's first permit's, or the first
	// name of a multi-key set (see scenario.Scenario.Key).
	Key string
	// Clock, when not nil, moves node clocks.
	Clock *ClockShim
}

// Fault is one kind of fault injection.
type Fault interface {
	// Name describes the fault in a few words, with its parameters.
	Name() string
	// Run injects the fault until ctx ends, then undoes it (heals links,
	// resumes and restarts what it stopped) before it returns. rng is the
	// fault's own random source, seeded from the run's seed. Run blocks.
	Run(ctx context.Context, env *Env, rng *rand.Rand) error
}

// Preparer is implemented by faults that must be in place before the
// workers start, such as a static partition. Prepare runs before Run.
type Preparer interface {
	Prepare(ctx context.Context, env *Env) error
}

// start records the start of a fault and returns its id for end.
func (e *Env) start(kind, target, detail string) int64 {
	id := e.Rec.NextID(history.ProcNemesis)
	e.Rec.Append(history.Event{Time: history.Now(), Process: history.ProcNemesis, Type: history.Start, Op: kind, ID: id, Target: target, Detail: detail})
	return id
}

// end records the end of the fault started as id.
func (e *Env) end(id int64, kind, target string) {
	e.Rec.Append(history.Event{Time: history.Now(), Process: history.ProcNemesis, Type: history.End, Op: kind, ID: id, Target: target})
}

// endDetail records the end of the fault started as id, with what it did.
func (e *Env) endDetail(id int64, kind, target, detail string) {
	e.Rec.Append(history.Event{Time: history.Now(), Process: history.ProcNemesis, Type: history.End, Op: kind, ID: id, Target: target, Detail: detail})
}

// instant records an instantaneous fault.
func (e *Env) instant(kind, target, detail string) {
	id := e.Rec.NextID(history.ProcNemesis)
	e.Rec.Append(history.Event{Time: history.Now(), Process: history.ProcNemesis, Type: history.Info, Op: kind, ID: id, Target: target, Detail: detail})
}

// grants subscribes to granted acquisitions.
func (e *Env) grants() (<-chan history.Event, func()) {
	return e.Rec.Subscribe(func(ev history.Event) bool {
		return ev.Type == history.OK && ev.Op == history.OpAcquire && strings.HasPrefix(ev.Process, "worker-")
	})
}

// writerGrants subscribes to granted acquisitions that are not a reader's:
// a grant carries no mark of its kind, its invocation does (Event.Shared).
func (e *Env) writerGrants() (<-chan history.Event, func()) {
	var mu sync.Mutex
	reading := map[string]bool{} // worker → its acquisition under way is a reader's
	return e.Rec.Subscribe(func(ev history.Event) bool {
		if ev.Op != history.OpAcquire || !strings.HasPrefix(ev.Process, "worker-") {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		switch ev.Type {
		case history.Invoke:
			reading[ev.Process] = ev.Shared
		case history.OK:
			return !reading[ev.Process]
		}
		return false
	})
}

// grantedLocks returns the locks of grant ev: the one key it holds (a
// lock, a permit or a reader's share), or each lock of a set taken
// together, in the order of the set.
func grantedLocks(ev history.Event) []history.HeldLock {
	if len(ev.Locks) > 0 {
		return ev.Locks
	}
	return []history.HeldLock{{Key: ev.Key, Token: ev.Token, Fence: ev.Fence, Deadline: ev.Deadline}}
}

// onGrants calls act with each grant seen at least cooldown after the last
// one acted on, until ctx ends or act fails. Grants seen in between are
// dropped: act runs while the holder it was called for is in its critical
// section.
func onGrants(ctx context.Context, env *Env, cooldown time.Duration, act func(history.Event) error) error {
	grants, cancel := env.grants()
	defer cancel()
	var last time.Time
	for {
		var ev history.Event
		select {
		case <-ctx.Done():
			return nil
		case ev = <-grants:
		}
		if time.Since(last) < cooldown {
			continue
		}
		last = time.Now()
		if err := act(ev); err != nil {
			return err
		}
	}
}

// nextGrant drops the grants seen so far and waits for the next one; ok
// is false when ctx ended first.
func nextGrant(ctx context.Context, grants <-chan history.Event) (ev history.Event, ok bool) {
	for drained := false; !drained; {
		select {
		case <-grants:
		default:
			drained = true
		}
	}
	select {
	case <-ctx.Done():
		return ev, false
	case ev = <-grants:
		return ev, true
	}
}

// sleep waits d or until ctx ends, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// between returns a uniformly random duration in [lo, hi].
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}

// pick returns k distinct random indexes below n, sorted.
func pick(rng *rand.Rand, n, k int) []int {
	idx := rng.Perm(n)[:k]
	slices.Sort(idx)
	return idx
}

// nodeName names node i in targets: "n<i>".
func nodeName(i int) string { return "n" + strconv.Itoa(i) }
