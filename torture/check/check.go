package check

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redlock-go/redlock/torture/history"
)

// Kind names a checker.
type Kind int

// The checkers.
const (
	Linearizable Kind = iota
	Overlap
	OverLimit
	LostUpdate
	FenceOrder
	// Observed is the checker of an election's observers (CheckObserved).
	Observed
	// Liveness is the checker of waiting (CheckLiveness), not of safety:
	// it is not in Kinds, and its violations fail a scenario whatever the
	// scenario expects of the others.
	Liveness
	numKinds
)

// Kinds lists every checker of safety, in report order.
var Kinds = []Kind{Linearizable, Overlap, OverLimit, LostUpdate, FenceOrder, Observed}

// String returns the checker's short name.
func (k Kind) String() string {
	switch k {
	case Linearizable:
		return "linearizable"
	case Overlap:
		return "overlap"
	case OverLimit:
		return "over-limit"
	case LostUpdate:
		return "lost-update"
	case FenceOrder:
		return "fence-order"
	case Observed:
		return "observed"
	case Liveness:
		return "liveness"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Violation is one thing a checker found wrong.
type Violation struct {
	Checker Kind
	// Start and End delimit where it happened on the monotonic clock; they
	// are equal for a point in time.
	Start, End int64
	// Workers are the workers involved.
	Workers []string
	// Detail explains it, with times relative to the run's start.
	Detail string
}

// Result is the verdict of every checker on one history.
type Result struct {
	// Ops counts the workers' operations, Attempts their acquisition
	// attempts, Grants the granted ones, Writes the writes the register
	// accepted.
	Ops, Attempts, Grants, Writes int
	// Counts holds each checker's number of violations, indexed by Kind.
	// For LostUpdate it counts updates lost, not the writes that lost them.
	Counts [numKinds]int
	// Applicable says which checkers had something to check: OverLimit
	// needs a semaphore, FenceOrder fencing tokens, Liveness a bound
	// stated.
	Applicable [numKinds]bool
	// Bound is the bound on waiting the history was held to, and Waits
	// what the liveness checker measured.
	Bound Bound
	Waits Waits
	// Unknown counts history segments the linearizability checker could not
	// decide in time; the run cannot be trusted when it is not zero.
	Unknown int
	// Violations lists what was found, in time order per checker.
	Violations []Violation
}

// Count returns the number of violations checker k found.
func (r *Result) Count(k Kind) int { return r.Counts[k] }

// Total returns the number of violations the checkers in kinds found.
func (r *Result) Total(kinds []Kind) int {
	n := 0
	for _, k := range kinds {
		n += r.Counts[k]
	}
	return n
}

// linearizeTimeout bounds the linearizability search of one history
// segment. Segments are short (they end wherever nobody holds or is taking
// the lock), so the search normally takes microseconds. One row's is not:
// in liveness/rwlock-one-client sixteen readers hold the lock nearly all
// the time, and its 12 s make one segment of some 20,000 operations, whose
// search took 12 s on 2 cores (the run erred at 10 s, its budget then).
const linearizeTimeout = time.Minute

// Check runs every checker on events, which must be sorted by time (see
// history.Read and history.Sort), the liveness checker with bound b.
// start is the run's start on the monotonic clock, used to print times.
// The checkers of one lock run on the grants of each key held apart: each
// permit of a semaphore is a lock of its own, and so is each lock of a set
// taken together.
func Check(events []history.Event, start int64, b Bound) Result {
	ops := history.Ops(events)
	grants := Grants(ops)
	var r Result
	r.countOps(ops)
	r.Grants = len(grants)
	parts := ByKey(grants)

	lin := perKey(parts, func(g []Grant) []Violation {
		vs, unknown := CheckLinearizable(g, start)
		r.Unknown += unknown
		return vs
	})
	r.add(Linearizable, lin, len(lin))
	r.Applicable[Linearizable] = true

	ov := perKey(parts, func(g []Grant) []Violation { return CheckOverlap(g, start) })
	r.add(Overlap, ov, len(ov))
	r.Applicable[Overlap] = true

	lim, limited := CheckLimit(grants, start)
	r.add(OverLimit, lim, len(lim))
	r.Applicable[OverLimit] = limited

	lost, n, writes := CheckLostUpdates(events, start)
	r.Writes = writes
	r.add(LostUpdate, lost, n)
	r.Applicable[LostUpdate] = true

	fo := perKey(parts, func(g []Grant) []Violation {
		vs, ok := CheckFenceOrder(g, start)
		r.Applicable[FenceOrder] = r.Applicable[FenceOrder] || ok
		return vs
	})
	r.add(FenceOrder, fo, len(fo))

	obs, observed := CheckObserved(events, grants, start)
	r.add(Observed, obs, len(obs))
	r.Applicable[Observed] = observed

	live, waits := CheckLiveness(ops, grants, history.Faults(events), b, start)
	r.Bound, r.Waits = b, waits
	r.add(Liveness, live, len(live))
	r.Applicable[Liveness] = b.Stated()
	return r
}

// countOps counts the workers' operations and acquisition attempts.
func (r *Result) countOps(ops []history.Op) {
	for _, op := range ops {
		if strings.HasPrefix(op.Process(), "worker-") {
			r.Ops++
			if op.Name() == history.OpAcquire {
				r.Attempts++
			}
		}
	}
}

// perKey runs checker on each part of parts (see ByKey) and returns the
// violations of all, in time order; when there is more than one key, each
// violation's detail starts with the key it is about.
func perKey(parts [][]Grant, checker func([]Grant) []Violation) []Violation {
	var out []Violation
	for _, part := range parts {
		vs := checker(part)
		if len(parts) > 1 {
			for i := range vs {
				vs[i].Detail = part[0].Key + ": " + vs[i].Detail
			}
		}
		out = append(out, vs...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

func (r *Result) add(k Kind, vs []Violation, count int) {
	r.Counts[k] = count
	r.Violations = append(r.Violations, vs...)
}

// relClock formats monotonic times relative to a run's start, in seconds.
type relClock int64

func (c relClock) at(t int64) string {
	return fmt.Sprintf("+%.3fs", float64(t-int64(c))/1e9)
}
