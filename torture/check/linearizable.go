package check

import (
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"
)

// lockInput is one operation on the lock model: an acquisition or a
// release, by a writer (or the holder of a plain lock) or by a reader.
type lockInput struct {
	release bool
	worker  int    // the worker's index (see workerIndex)
	reader  uint64 // a reader's bit in lockState.readers; 0 for a writer
}

// lockState is the lock model's state: the writer holding the lock (free
// when none) and the readers holding it, a bit each.
type lockState struct {
	writer  int
	readers uint64
}

// free is the lock model's writer when no writer holds the lock.
const free = -1

// maxReaders is how many readers the lock model tells apart in one segment
// of a history: a bit of lockState.readers each. A segment with more is
// left undecided.
const maxReaders = 64

// lockModel is a read-write lock: a writer needs it free of writers and
// readers, a reader free of writers, and a release needs the caller to
// hold it; a plain lock is one without readers, a mutex. Failed
// acquisition attempts are left out of the history: a Redlock attempt can
// fail even when the lock is free (split votes, slow nodes), so in the
// model they would be a no-op that fits anywhere, and they only slow the
// search down.
var lockModel = porcupine.Model{
	Init: func() any { return lockState{writer: free} },
	Step: func(state, input, _ any) (bool, any) {
		ok, next := step(state.(lockState), input.(lockInput))
		return ok, next
	},
	DescribeOperation: func(input, _ any) string {
		in := input.(lockInput)
		op := "acquire"
		if in.release {
			op = "release"
		}
		if in.reader != 0 {
			op += " shared"
		}
		return fmt.Sprintf("%s(worker-%d)", op, in.worker)
	},
	DescribeState: func(state any) string {
		s := state.(lockState)
		switch {
		case s.writer != free:
			return fmt.Sprintf("held by worker-%d", s.writer)
		case s.readers != 0:
			return fmt.Sprintf("held shared by %d readers", bits.OnesCount64(s.readers))
		}
		return "free"
	},
}

// step applies in to s: whether the operation is allowed, and the state
// after it.
func step(s lockState, in lockInput) (bool, lockState) {
	switch {
	case in.reader != 0 && in.release:
		return s.readers&in.reader != 0, lockState{writer: s.writer, readers: s.readers &^ in.reader}
	case in.reader != 0:
		return s.writer == free && s.readers&in.reader == 0, lockState{writer: s.writer, readers: s.readers | in.reader}
	case in.release:
		return s.writer == in.worker, lockState{writer: free, readers: s.readers}
	default:
		return s.writer == free && s.readers == 0, lockState{writer: in.worker, readers: s.readers}
	}
}

// CheckLinearizable checks the grants against the lock model: a mutex, or
// a read-write lock when some grants are readers'. Each grant is an
// acquire that took effect between its attempt's start and its return,
// and a release that took effect between the holder's release call and
// its return, or at the validity deadline if that came first: the lock
// promises nothing after it. The history is cut into segments where no
// grant is in progress, which are checked separately; each segment that is
// not linearizable is one violation. It also returns how many segments the
// checker could not decide in time, or at all (more than maxReaders
// readers). start is the run's start, for the times in the violations'
// details.
func CheckLinearizable(grants []Grant, start int64) (violations []Violation, unknown int) {
	clock := relClock(start)
	for _, seg := range segments(grants) {
		ops, ok := lockOps(seg)
		if !ok {
			unknown++
			continue
		}
		switch porcupine.CheckOperationsTimeout(lockModel, ops, linearizeTimeout) {
		case porcupine.Illegal:
			violations = append(violations, illegal(seg, clock))
		case porcupine.Unknown:
			unknown++
		}
	}
	return violations, unknown
}

// lockOps returns the operations of seg, a segment of grants, on the lock
// model: an acquire and a release per grant. It reports false when seg has
// more readers than the model tells apart.
func lockOps(seg []Grant) ([]porcupine.Operation, bool) {
	readers := map[string]uint64{}
	ops := make([]porcupine.Operation, 0, 2*len(seg))
	for _, g := range seg {
		w := workerIndex(g.Worker)
		var bit uint64
		if g.Shared {
			if bit = readers[g.Worker]; bit == 0 {
				if len(readers) == maxReaders {
					return nil, false
				}
				bit = 1 << len(readers)
				readers[g.Worker] = bit
			}
		}
		relCall, relReturn := g.End(), g.End()
		if g.Released != 0 && g.Released < g.Deadline {
			relReturn = min(g.ReleaseDone, g.Deadline)
		}
		ops = append(ops,
			porcupine.Operation{ClientId: w, Input: lockInput{worker: w, reader: bit}, Call: g.Since, Return: g.Granted},
			porcupine.Operation{ClientId: w, Input: lockInput{release: true, worker: w, reader: bit}, Call: relCall, Return: relReturn},
		)
	}
	return ops, true
}

// illegal returns the violation of seg, a segment that is not
// linearizable.
func illegal(seg []Grant, clock relClock) Violation {
	start, end := seg[0].Since, seg[0].End()
	workers := map[string]bool{}
	for _, g := range seg {
		end = max(end, g.End())
		workers[g.Worker] = true
	}
	return Violation{
		Checker: Linearizable, Start: start, End: end, Workers: sortedKeys(workers),
		Detail: fmt.Sprintf("the %d grants from %s to %s cannot be ordered as the lock allows", len(seg), clock.at(start), clock.at(end)),
	}
}

// segments cuts grants (ordered by grant time) into groups such that every
// grant of a group starts (at its Since) after all grants of the groups
// before it ended.
func segments(grants []Grant) [][]Grant {
	bySince := append([]Grant(nil), grants...)
	sort.SliceStable(bySince, func(i, j int) bool { return bySince[i].Since < bySince[j].Since })
	var out [][]Grant
	var cur []Grant
	var reach int64
	for _, g := range bySince {
		if len(cur) > 0 && g.Since > reach {
			out = append(out, cur)
			cur = nil
		}
		cur = append(cur, g)
		end := g.End()
		if g.Released != 0 && g.Released < g.Deadline {
			end = min(g.ReleaseDone, g.Deadline)
		}
		reach = max(reach, end)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// workerIndex returns i for "worker-<i>", or -2 for anything else (never
// equal to free, nor to a real worker).
func workerIndex(name string) int {
	i, err := strconv.Atoi(strings.TrimPrefix(name, "worker-"))
	if err != nil || !strings.HasPrefix(name, "worker-") {
		return -2
	}
	return i
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
