package check

import (
	"cmp"
	"math"
	"sort"
	"strings"

	"github.com/redlock-go/redlock/torture/history"
)

// Grant is one granted acquisition and how it ended.
type Grant struct {
	Worker string
	// Name is the name the holder asked for: the lock, or the semaphore
	// whose permit it took. Key is the key it holds: the lock again, or the
	// permit. Limit is the semaphore's number of permits, 0 for a lock.
	Name, Key string
	Limit     int
	// Shared marks a reader of a read-write lock, which holds the key
	// together with other readers but never with a writer.
	Shared bool
	// Invoke is when the acquisition call began, Granted when it returned;
	// the lock was taken somewhere in between.
	Invoke, Granted int64
	// Since is the earliest the lock can have been taken: Invoke, or later
	// when the grant reports the lock's TTL, as the client's validity
	// deadline is at most a TTL after the start of the attempt that won.
	// A call that waited for the lock through many attempts thus spans
	// only its last one in the linearizability check, which must otherwise
	// try every order of the calls that waited together.
	Since int64
	// Deadline is the validity deadline the client computed, or the later
	// one that a renewing holder's release reported: extensions move it.
	Deadline int64
	// Released is when the holder called release, ReleaseDone when that
	// returned; both are 0 when it never did.
	Released, ReleaseDone int64
	Token                 string
	Fence                 uint64
}

// End is when the holder stopped holding the lock: when it called release,
// or at its validity deadline if that came first (or it never released).
func (g Grant) End() int64 {
	if g.Released != 0 && g.Released < g.Deadline {
		return g.Released
	}
	return g.Deadline
}

// Grants extracts the granted acquisitions from ops, each with its release,
// ordered by grant time. An acquisition of several names together is a
// grant per name, each with its own lock's key, token, fencing token and
// deadline, all invoked and granted together.
func Grants(ops []history.Op) []Grant {
	index := map[heldBy]int{}
	var grants []Grant
	for _, op := range ops {
		if !strings.HasPrefix(op.Process(), "worker-") {
			continue
		}
		switch op.Name() {
		case history.OpAcquire:
			if !op.OK() {
				continue
			}
			for _, g := range granted(op) {
				index[heldBy{g.Worker, g.Token}] = len(grants)
				grants = append(grants, g)
			}
		case history.OpRelease:
			for _, l := range released(op) {
				if i, ok := index[heldBy{op.Process(), l.Token}]; ok {
					grants[i].release(op, l.Deadline)
				}
			}
		}
	}
	sort.SliceStable(grants, func(i, j int) bool { return grants[i].Granted < grants[j].Granted })
	return grants
}

// heldBy identifies a grant by its holder and its lock's token.
type heldBy struct{ worker, token string }

// granted returns the grants of op, a granted acquisition: one, or one per
// lock of a set taken together.
func granted(op history.Op) []Grant {
	inv, c := op.Invoked, op.Completed
	g := Grant{
		Worker: op.Process(), Name: inv.Key, Key: cmp.Or(c.Key, inv.Key), Limit: inv.Limit, Shared: inv.Shared,
		Invoke: inv.Time, Granted: c.Time, Deadline: c.Deadline, Token: c.Token, Fence: c.Fence,
	}
	if len(c.Locks) == 0 {
		g.Since = since(g, c.TTL)
		return []Grant{g}
	}
	out := make([]Grant, len(c.Locks))
	for i, l := range c.Locks {
		out[i] = g
		out[i].Name, out[i].Key, out[i].Token, out[i].Fence, out[i].Deadline = l.Key, l.Key, l.Token, l.Fence, l.Deadline
		out[i].Since = since(out[i], c.TTL)
	}
	return out
}

// since returns g's Since: its deadline less ttl, within [Invoke,
// Granted], or Invoke when ttl is 0 (not reported).
func since(g Grant, ttl int64) int64 {
	if ttl <= 0 {
		return g.Invoke
	}
	return min(max(g.Invoke, g.Deadline-ttl), g.Granted)
}

// released returns the locks op, a release, releases: its token and the
// deadline its invocation reports, or each lock of a set.
func released(op history.Op) []history.HeldLock {
	if inv := op.Invoked; len(inv.Locks) == 0 {
		return []history.HeldLock{{Key: inv.Key, Token: inv.Token, Deadline: inv.Deadline}}
	}
	return op.Invoked.Locks
}

// release records that the holder called release in op, reporting the
// validity deadline deadline (0 when it did not report one).
func (g *Grant) release(op history.Op, deadline int64) {
	g.Released = op.Invoked.Time
	g.Deadline = max(g.Deadline, deadline)
	g.ReleaseDone = math.MaxInt64
	if op.Done() {
		g.ReleaseDone = op.Completed.Time
	}
}

// ByKey splits grants (ordered by grant time) by the key held, each part
// in the same order; the parts are ordered by key. Every permit of a
// semaphore is a lock of its own, checked on its own.
func ByKey(grants []Grant) [][]Grant {
	index := map[string]int{}
	var parts [][]Grant
	for _, g := range grants {
		i, ok := index[g.Key]
		if !ok {
			i = len(parts)
			index[g.Key] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], g)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i][0].Key < parts[j][0].Key })
	return parts
}
