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
	// Invoke is when the successful attempt began, Granted when it
	// returned; the lock was taken somewhere in between.
	Invoke, Granted int64
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
// ordered by grant time.
func Grants(ops []history.Op) []Grant {
	type key struct{ worker, token string }
	index := map[key]int{}
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
			c := op.Completed
			index[key{op.Process(), c.Token}] = len(grants)
			grants = append(grants, Grant{
				Worker: op.Process(), Name: op.Invoked.Key, Key: cmp.Or(c.Key, op.Invoked.Key), Limit: op.Invoked.Limit,
				Invoke: op.Invoked.Time, Granted: c.Time, Deadline: c.Deadline, Token: c.Token, Fence: c.Fence,
			})
		case history.OpRelease:
			i, ok := index[key{op.Process(), op.Invoked.Token}]
			if !ok {
				continue
			}
			grants[i].Released = op.Invoked.Time
			grants[i].Deadline = max(grants[i].Deadline, op.Invoked.Deadline)
			grants[i].ReleaseDone = math.MaxInt64
			if op.Done() {
				grants[i].ReleaseDone = op.Completed.Time
			}
		}
	}
	sort.SliceStable(grants, func(i, j int) bool { return grants[i].Granted < grants[j].Granted })
	return grants
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
