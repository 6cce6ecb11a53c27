package check_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/torture/check"
	"github.com/redlock-go/redlock/torture/history"
)

// ms is one millisecond on the monotonic clock.
const ms = int64(1e6)

// builder writes hand-made histories.
type builder struct {
	events []history.Event
	ids    map[string]int64
	token  int
	regs   map[string]int64 // register → version
}

func newBuilder() *builder { return &builder{ids: map[string]int64{}, regs: map[string]int64{}} }

func (b *builder) op(worker, op string, inv, done int64, typ history.Type, set func(*history.Event)) {
	b.ids[worker]++
	id := b.ids[worker]
	in := history.Event{Time: inv, Process: worker, Type: history.Invoke, Op: op, ID: id}
	out := history.Event{Time: done, Process: worker, Type: typ, Op: op, ID: id}
	if set != nil {
		set(&in)
		set(&out)
		in.Type, in.Time = history.Invoke, inv
	}
	b.events = append(b.events, in)
	if typ != "" {
		b.events = append(b.events, out)
	}
}

// grant records a granted acquisition [inv, granted] valid until deadline,
// released at [rel, relDone] (rel 0: never released).
func (b *builder) grant(worker string, inv, granted, deadline, rel, relDone int64, fence uint64) {
	b.hold(worker, semaphore{}, 0, inv, granted, deadline, rel, relDone, fence)
}

// semaphore names a semaphore of limit permits in hand-made histories; its
// zero value stands for a lock without a name.
type semaphore struct {
	name  string
	limit int
}

// permitKey returns the key of permit i of s.
func (s semaphore) permitKey(i int) string { return fmt.Sprintf("%s:permit:%d", s.name, i) }

// hold records a grant as grant does: of permit i of sem, or of the lock
// when sem is the zero semaphore.
func (b *builder) hold(worker string, sem semaphore, i int, inv, granted, deadline, rel, relDone int64, fence uint64) {
	b.holdAs(worker, sem, i, false, inv, granted, deadline, rel, relDone, fence)
}

// read records a reader's grant of the lock, shared with other readers,
// as grant does a writer's.
func (b *builder) read(worker string, inv, granted, deadline, rel, relDone int64, fence uint64) {
	b.holdAs(worker, semaphore{}, 0, true, inv, granted, deadline, rel, relDone, fence)
}

// holdAs records a grant as hold does, a reader's if shared.
func (b *builder) holdAs(worker string, sem semaphore, i int, shared bool, inv, granted, deadline, rel, relDone int64, fence uint64) {
	b.token++
	token := fmt.Sprintf("t%d", b.token)
	key := ""
	if sem.limit > 0 {
		key = sem.permitKey(i)
	}
	b.op(worker, history.OpAcquire, inv, granted, history.OK, func(ev *history.Event) {
		ev.Token, ev.Fence, ev.Deadline, ev.Key = token, fence, deadline, key
		if ev.Type == history.Invoke {
			ev.Key, ev.Limit, ev.Shared = sem.name, sem.limit, shared
		}
	})
	if rel != 0 {
		b.op(worker, history.OpRelease, rel, relDone, history.OK, func(ev *history.Event) { ev.Token, ev.Key = token, key })
	}
}

// holdAll records a grant of the locks of names taken together, each valid
// until deadline with its fence of fences, in the order of names, and the
// set's release at [rel, relDone] (rel 0: never released).
func (b *builder) holdAll(worker string, names []string, inv, granted, deadline, rel, relDone int64, fences ...uint64) {
	locks := make([]history.HeldLock, len(names))
	for i, name := range names {
		b.token++
		locks[i] = history.HeldLock{Key: name, Token: fmt.Sprintf("t%d", b.token), Fence: fences[i], Deadline: deadline}
	}
	b.op(worker, history.OpAcquire, inv, granted, history.OK, func(ev *history.Event) {
		ev.Locks = locks
		if ev.Type == history.Invoke {
			ev.Names, ev.Locks = names, nil
		}
	})
	if rel != 0 {
		b.op(worker, history.OpRelease, rel, relDone, history.OK, func(ev *history.Event) {
			ev.Locks = make([]history.HeldLock, len(locks))
			for i, l := range locks {
				ev.Locks[i] = history.HeldLock{Key: l.Key, Token: l.Token}
			}
		})
	}
}

// fail records a failed attempt.
func (b *builder) fail(worker string, inv, done int64) {
	b.op(worker, history.OpAcquire, inv, done, history.Fail, nil)
}

// write records a write the register accepted, computed from version
// basedOn (-1: the current version).
func (b *builder) write(worker string, t int64, basedOn int64, fence uint64) {
	b.writeTo("", worker, t, basedOn, fence)
}

// writeTo records a write as write does, to the register named reg.
func (b *builder) writeTo(reg, worker string, t int64, basedOn int64, fence uint64) {
	if basedOn < 0 {
		basedOn = b.regs[reg]
	}
	b.regs[reg]++
	b.events = append(b.events, history.Event{Time: t, Process: history.ProcRegister, Type: history.OK, Op: history.OpWrite,
		ID: int64(len(b.events)), Key: reg, Worker: worker, Fence: fence, BasedOn: basedOn, Version: b.regs[reg]})
}

func (b *builder) check(t *testing.T) check.Result {
	t.Helper()
	return check.Check(b.sorted(), 0, check.Bound{})
}

// sorted returns the history, sorted by time.
func (b *builder) sorted() []history.Event {
	history.Sort(b.events)
	return b.events
}

// wantCounts compares the violation counts with want, in check.Kinds
// order; the checkers past want (Observed: no observer here) find none.
func wantCounts(t *testing.T, r check.Result, want [5]int) {
	t.Helper()
	all := make([]int, len(check.Kinds))
	copy(all, want[:])
	for i, k := range check.Kinds {
		if r.Count(k) != all[i] {
			var details []string
			for _, v := range r.Violations {
				details = append(details, v.Checker.String()+": "+v.Detail)
			}
			t.Fatalf("%s found %d violations, want %d; violations:\n%s", k, r.Count(k), all[i], strings.Join(details, "\n"))
		}
	}
	if r.Unknown != 0 {
		t.Fatalf("Unknown = %d", r.Unknown)
	}
}

// clean is a correct history: three workers take turns, with contention,
// one lock that expires before its late release, and fences that grow.
func clean() *builder {
	b := newBuilder()
	b.fail("worker-1", 1*ms, 2*ms)
	b.grant("worker-0", 1*ms, 3*ms, 500*ms, 10*ms, 11*ms, 1)
	b.write("worker-0", 8*ms, -1, 1)
	b.fail("worker-1", 5*ms, 6*ms)
	// worker-1's attempt overlaps worker-0's release: either order is fine.
	b.grant("worker-1", 9*ms, 10*ms+500_000, 500*ms, 20*ms, 21*ms, 2)
	b.write("worker-1", 15*ms, -1, 2)
	// worker-2 holds until its deadline and releases late; worker-0 takes
	// over after the deadline, before that release.
	b.grant("worker-2", 30*ms, 31*ms, 60*ms, 90*ms, 91*ms, 3)
	b.write("worker-2", 40*ms, -1, 3)
	b.grant("worker-0", 61*ms, 62*ms, 560*ms, 70*ms, 71*ms, 4)
	b.write("worker-0", 65*ms, -1, 4)
	return b
}

func TestCheck_cleanHistoryHolds(t *testing.T) {
	b := clean()
	r := b.check(t)
	wantCounts(t, r, [5]int{})
	if r.Grants != 4 || r.Attempts != 6 || r.Writes != 4 || !r.Applicable[check.FenceOrder] {
		t.Fatalf("Grants = %d, Attempts = %d, Writes = %d, fence applicable = %v; want 4, 6, 4, true",
			r.Grants, r.Attempts, r.Writes, r.Applicable[check.FenceOrder])
	}
}

func TestCheck_overlappingHoldersAreCaught(t *testing.T) {
	b := clean()
	// worker-3 is granted while worker-0 (62-70 ms) holds the lock.
	b.grant("worker-3", 63*ms, 64*ms, 560*ms, 80*ms, 81*ms, 5)
	r := b.check(t)
	wantCounts(t, r, [5]int{1, 1, 0, 0, 0})
	for _, v := range r.Violations {
		if v.Checker == check.Overlap && (v.Start != 64*ms || v.End != 70*ms) {
			t.Fatalf("overlap at [%d, %d], want [64ms, 70ms]", v.Start, v.End)
		}
	}
}

func TestCheck_grantAfterReleaseCallHolds(t *testing.T) {
	b := clean()
	// Granted after worker-0 called release (70 ms) but before the release
	// returned (71 ms): the release took effect in between.
	b.grant("worker-3", 69*ms, 70*ms+500_000, 560*ms, 80*ms, 81*ms, 5)
	wantCounts(t, b.check(t), [5]int{})
}

func TestCheck_lostUpdateIsCaught(t *testing.T) {
	b := clean()
	// worker-2 resumes after a pause and writes from version 2 although
	// versions 3 and 4 were written since.
	b.write("worker-2", 95*ms, 2, 3)
	r := b.check(t)
	wantCounts(t, r, [5]int{0, 0, 0, 2, 0})
	if v := r.Violations[0]; v.Checker != check.LostUpdate || v.Workers[0] != "worker-2" {
		t.Fatalf("violation = %+v, want a lost update by worker-2", v)
	}
}

func TestCheck_fenceRegressionIsCaught(t *testing.T) {
	b := clean()
	b.grant("worker-1", 100*ms, 101*ms, 600*ms, 110*ms, 111*ms, 4) // same fence as the last grant
	b.grant("worker-2", 120*ms, 121*ms, 600*ms, 130*ms, 131*ms, 2) // lower
	wantCounts(t, b.check(t), [5]int{0, 0, 0, 0, 2})
}

func TestCheck_concurrentAttemptsAreNotOrdered(t *testing.T) {
	b := newBuilder()
	// worker-1's attempt began before worker-0's grant returned: they are
	// concurrent, so a lower fence for worker-1 is not a violation.
	b.grant("worker-0", 0, 2*ms, 500*ms, 3*ms, 4*ms, 7)
	b.grant("worker-1", 1*ms, 5*ms, 500*ms, 6*ms, 7*ms, 6)
	wantCounts(t, b.check(t), [5]int{})
}

func TestCheck_withoutFencesFenceOrderDoesNotApply(t *testing.T) {
	b := newBuilder()
	b.grant("worker-0", 0, 1*ms, 500*ms, 2*ms, 3*ms, 0)
	b.grant("worker-1", 4*ms, 5*ms, 500*ms, 6*ms, 7*ms, 0)
	r := b.check(t)
	wantCounts(t, r, [5]int{})
	if r.Applicable[check.FenceOrder] {
		t.Fatal("FenceOrder applicable without fences")
	}
}

func TestCheck_unreleasedLockEndsAtItsDeadline(t *testing.T) {
	b := newBuilder()
	// worker-0 never releases (it died); worker-1 gets the lock after the
	// deadline: fine. worker-2 gets it before: caught.
	b.grant("worker-0", 0, 1*ms, 50*ms, 0, 0, 1)
	b.grant("worker-1", 50*ms, 51*ms, 100*ms, 60*ms, 61*ms, 2)
	wantCounts(t, b.check(t), [5]int{})
	b.grant("worker-2", 20*ms, 21*ms, 100*ms, 30*ms, 31*ms, 3)
	wantCounts(t, b.check(t), [5]int{1, 1, 0, 0, 1})
}

func TestCheck_acquireReturningBeforeTheReleaseIsCaught(t *testing.T) {
	b := newBuilder()
	// worker-1's acquisition returned (9 ms) before worker-0 even called
	// release (10 ms): whichever instants the two took effect at, the mutex
	// was held twice.
	b.grant("worker-0", 0, 1*ms, 500*ms, 10*ms, 11*ms, 1)
	b.fail("worker-2", 3*ms, 4*ms) // failed attempts are no-ops
	b.grant("worker-1", 2*ms, 9*ms, 500*ms, 12*ms, 13*ms, 2)
	r := b.check(t)
	wantCounts(t, r, [5]int{1, 1, 0, 0, 0})
	for _, v := range r.Violations {
		if strings.Join(v.Workers, ",") != "worker-0,worker-1" {
			t.Fatalf("%s violation names workers %v, want worker-0 and worker-1", v.Checker, v.Workers)
		}
	}
}

func TestCheck_renewedLockEndsAtTheDeadlineItsReleaseReports(t *testing.T) {
	b := newBuilder()
	// worker-0's lock was granted until 50 ms and renewed until 150 ms; its
	// release at 120 ms reports the later deadline. worker-1's grant at
	// 100 ms overlaps it.
	b.grant("worker-0", 0, 1*ms, 50*ms, 0, 0, 1)
	b.op("worker-0", history.OpRelease, 120*ms, 121*ms, history.OK, func(ev *history.Event) {
		ev.Token, ev.Deadline = "t1", 150*ms
	})
	b.grant("worker-1", 90*ms, 100*ms, 200*ms, 130*ms, 131*ms, 2)
	wantCounts(t, b.check(t), [5]int{1, 1, 0, 0, 0})
}

// sem is the semaphore of the hand-made histories of permits.
var sem = semaphore{name: "sem", limit: 3}

// semClean is a correct history of sem: three workers hold its three
// permits at once, each writing the register of its own permit with its
// own permit's fences; one permit is taken over after its holder's release
// call, another after its holder's validity ended.
func semClean() *builder {
	b := newBuilder()
	b.hold("worker-0", sem, 1, 1*ms, 2*ms, 500*ms, 20*ms, 21*ms, 1)
	b.hold("worker-1", sem, 2, 1*ms, 3*ms, 500*ms, 22*ms, 23*ms, 1)
	b.hold("worker-2", sem, 3, 2*ms, 4*ms, 40*ms, 60*ms, 61*ms, 1) // expires at 40 ms
	b.fail("worker-3", 5*ms, 6*ms)                                 // every permit held
	b.writeTo(sem.permitKey(1), "worker-0", 10*ms, -1, 1)
	b.writeTo(sem.permitKey(2), "worker-1", 10*ms, -1, 1)
	b.writeTo(sem.permitKey(3), "worker-2", 12*ms, -1, 1)
	b.hold("worker-3", sem, 1, 19*ms, 20*ms+500_000, 500*ms, 30*ms, 31*ms, 2)
	b.writeTo(sem.permitKey(1), "worker-3", 25*ms, -1, 2)
	b.hold("worker-0", sem, 3, 40*ms, 41*ms, 540*ms, 50*ms, 51*ms, 3)
	b.writeTo(sem.permitKey(3), "worker-0", 45*ms, -1, 3)
	return b
}

func TestCheck_permitsAreCheckedAsLocksOfTheirOwn(t *testing.T) {
	r := semClean().check(t)
	// As one lock, the permits held together would overlap, their fences
	// repeat and their registers' writes look lost.
	wantCounts(t, r, [5]int{})
	if r.Grants != 5 || r.Writes != 5 || !r.Applicable[check.FenceOrder] {
		t.Fatalf("Grants = %d, Writes = %d, fence applicable = %v; want 5, 5, true", r.Grants, r.Writes, r.Applicable[check.FenceOrder])
	}
}

func TestCheck_twoHoldersOfOnePermitAreCaught(t *testing.T) {
	b := semClean()
	// worker-4 takes permit 3 while worker-2 holds it: two holders, of the
	// three the semaphore allows, but of one permit.
	b.hold("worker-4", sem, 3, 31*ms, 32*ms, 500*ms, 35*ms, 36*ms, 2)
	r := b.check(t)
	wantCounts(t, r, [5]int{1, 1, 0, 0, 0})
	for _, v := range r.Violations {
		if !strings.HasPrefix(v.Detail, sem.permitKey(3)+": ") {
			t.Fatalf("%s violation %q does not name sem:permit:3 first", v.Checker, v.Detail)
		}
		if v.Checker == check.Overlap && strings.Join(v.Workers, ",") != "worker-2,worker-4" {
			t.Fatalf("overlap names workers %v, want worker-2 and worker-4", v.Workers)
		}
	}
}

func TestCheck_fenceRegressionOnAPermitIsCaught(t *testing.T) {
	b := semClean()
	b.hold("worker-1", sem, 2, 70*ms, 71*ms, 600*ms, 80*ms, 81*ms, 1) // permit 2 granted fence 1 twice
	wantCounts(t, b.check(t), [5]int{0, 0, 0, 0, 1})
}

func TestCheck_lostUpdateOnAPermitsRegisterIsCaught(t *testing.T) {
	b := semClean()
	// worker-0 writes permit 1's register late, from the version before
	// worker-3's update.
	b.writeTo(sem.permitKey(1), "worker-0", 70*ms, 1, 1)
	r := b.check(t)
	wantCounts(t, r, [5]int{0, 0, 0, 1, 0})
	if v := r.Violations[0]; !strings.Contains(v.Detail, "register "+sem.permitKey(1)) || v.Workers[1] != "worker-3" {
		t.Fatalf("violation = %+v, want worker-3's update of sem:permit:1 lost", v)
	}
}

func TestCheckLimit_holdersAtTheLimitHold(t *testing.T) {
	r := semClean().check(t) // three holders at once, from 4 to 20 ms
	wantCounts(t, r, [5]int{})
	if !r.Applicable[check.OverLimit] {
		t.Fatal("OverLimit not applicable to a semaphore")
	}
	if r := clean().check(t); r.Applicable[check.OverLimit] {
		t.Fatal("OverLimit applicable to a lock")
	}
}

func TestCheckLimit_moreHoldersThanTheLimitAreCaught(t *testing.T) {
	b := semClean()
	// worker-4 takes permit 2 while worker-1 holds it, and the other two
	// permits are held: four holders from 10 to 15 ms.
	b.hold("worker-4", sem, 2, 9*ms, 10*ms, 500*ms, 15*ms, 16*ms, 2)
	r := b.check(t)
	wantCounts(t, r, [5]int{1, 1, 1, 0, 0})
	for _, v := range r.Violations {
		if v.Checker != check.OverLimit {
			continue
		}
		if v.Start != 10*ms || v.End != 15*ms || strings.Join(v.Workers, ",") != "worker-0,worker-1,worker-2,worker-4" {
			t.Fatalf("over-limit at [%d, %d] with %v, want [10ms, 15ms] with worker-0, 1, 2 and 4", v.Start, v.End, v.Workers)
		}
		if !strings.HasPrefix(v.Detail, "4 holders of sem at once, over its limit of 3, from +0.010s for 5.0 ms") {
			t.Fatalf("detail %q", v.Detail)
		}
	}
}

func TestCheckLimit_aHolderStopsCountingAtItsValidityDeadline(t *testing.T) {
	b := semClean()
	// worker-2's permit 3 expired at 40 ms and worker-0 took it at 41 ms;
	// worker-2 releases only at 60 ms. Permits 1 and 2 are held again from
	// 43 ms: three holders within validity, four counting worker-2 until
	// its release.
	b.hold("worker-3", sem, 1, 42*ms, 43*ms, 500*ms, 55*ms, 56*ms, 3)
	b.hold("worker-1", sem, 2, 42*ms, 44*ms, 500*ms, 55*ms, 56*ms, 2)
	wantCounts(t, b.check(t), [5]int{})
	// The same holders with worker-2's validity running to its release.
	b = newBuilder()
	b.hold("worker-2", sem, 3, 2*ms, 4*ms, 70*ms, 60*ms, 61*ms, 1)
	b.hold("worker-0", sem, 3, 40*ms, 41*ms, 540*ms, 50*ms, 51*ms, 2)
	b.hold("worker-3", sem, 1, 42*ms, 43*ms, 500*ms, 55*ms, 56*ms, 1)
	b.hold("worker-1", sem, 2, 42*ms, 44*ms, 500*ms, 55*ms, 56*ms, 1)
	wantCounts(t, b.check(t), [5]int{1, 1, 1, 0, 0})
}

func TestCheckLimit_theLargestLimitGivenANameIsChecked(t *testing.T) {
	b := semClean()
	// A client that gives sem a limit of 4 takes permit 4 while the three
	// others are held: four holders, as many as that client allows.
	b.hold("worker-4", semaphore{name: sem.name, limit: 4}, 4, 9*ms, 10*ms, 500*ms, 15*ms, 16*ms, 1)
	wantCounts(t, b.check(t), [5]int{})
}

// An observer that sees an older leader after a newer one, or a leader
// with another term than its grant's, is caught; one that sees leaders in
// term order is not, even one whose campaign failed after a quorum
// granted it (token "c", no grant).
func TestCheckObserved(t *testing.T) {
	grants := []check.Grant{{Worker: "worker-0", Token: "a", Fence: 5}, {Worker: "worker-1", Token: "b", Fence: 7}}
	observe := func(proc, token string, term uint64, at int64) history.Event {
		return history.Event{Time: at, Process: proc, Type: history.Info, Op: "observe", Token: token, Fence: term}
	}
	good := []history.Event{observe("o", "", 0, 1), observe("o", "a", 5, 2), observe("o", "", 0, 3), observe("o", "b", 7, 4),
		observe("p", "b", 7, 5)}
	if vs, ok := check.CheckObserved(good, grants, 0); !ok || len(vs) != 0 {
		t.Errorf("in order: %v, %v", vs, ok)
	}
	bad := []history.Event{observe("o", "b", 7, 1), observe("o", "a", 5, 2), observe("o", "b", 8, 3), observe("o", "c", 9, 4)}
	if vs, _ := check.CheckObserved(bad, grants, 0); len(vs) != 2 {
		t.Errorf("an older leader, and a leader with another term than its grant's: %d violations %v, want 2", len(vs), vs)
	}
	if _, ok := check.CheckObserved(nil, grants, 0); ok {
		t.Error("applicable without observers")
	}
}
