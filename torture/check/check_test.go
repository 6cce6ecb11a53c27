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
	reg    int64 // register version
}

func newBuilder() *builder { return &builder{ids: map[string]int64{}} }

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
	b.token++
	token := fmt.Sprintf("t%d", b.token)
	b.op(worker, history.OpAcquire, inv, granted, history.OK, func(ev *history.Event) {
		ev.Token, ev.Fence, ev.Deadline = token, fence, deadline
	})
	if rel != 0 {
		b.op(worker, history.OpRelease, rel, relDone, history.OK, func(ev *history.Event) { ev.Token = token })
	}
}

// fail records a failed attempt.
func (b *builder) fail(worker string, inv, done int64) {
	b.op(worker, history.OpAcquire, inv, done, history.Fail, nil)
}

// write records a write the register accepted, computed from version
// basedOn (-1: the current version).
func (b *builder) write(worker string, t int64, basedOn int64, fence uint64) {
	if basedOn < 0 {
		basedOn = b.reg
	}
	b.reg++
	b.events = append(b.events, history.Event{Time: t, Process: history.ProcRegister, Type: history.OK, Op: history.OpWrite,
		ID: b.reg, Worker: worker, Fence: fence, BasedOn: basedOn, Version: b.reg})
}

func (b *builder) check(t *testing.T) check.Result {
	t.Helper()
	history.Sort(b.events)
	return check.Check(b.events, 0)
}

// wantCounts compares the violation counts with want, in check.Kinds order.
func wantCounts(t *testing.T, r check.Result, want [4]int) {
	t.Helper()
	for i, k := range check.Kinds {
		if r.Count(k) != want[i] {
			var details []string
			for _, v := range r.Violations {
				details = append(details, v.Checker.String()+": "+v.Detail)
			}
			t.Fatalf("%s found %d violations, want %d; violations:\n%s", k, r.Count(k), want[i], strings.Join(details, "\n"))
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
	wantCounts(t, r, [4]int{})
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
	wantCounts(t, r, [4]int{1, 1, 0, 0})
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
	wantCounts(t, b.check(t), [4]int{})
}

func TestCheck_lostUpdateIsCaught(t *testing.T) {
	b := clean()
	// worker-2 resumes after a pause and writes from version 2 although
	// versions 3 and 4 were written since.
	b.write("worker-2", 95*ms, 2, 3)
	r := b.check(t)
	wantCounts(t, r, [4]int{0, 0, 2, 0})
	if v := r.Violations[0]; v.Checker != check.LostUpdate || v.Workers[0] != "worker-2" {
		t.Fatalf("violation = %+v, want a lost update by worker-2", v)
	}
}

func TestCheck_fenceRegressionIsCaught(t *testing.T) {
	b := clean()
	b.grant("worker-1", 100*ms, 101*ms, 600*ms, 110*ms, 111*ms, 4) // same fence as the last grant
	b.grant("worker-2", 120*ms, 121*ms, 600*ms, 130*ms, 131*ms, 2) // lower
	wantCounts(t, b.check(t), [4]int{0, 0, 0, 2})
}

func TestCheck_concurrentAttemptsAreNotOrdered(t *testing.T) {
	b := newBuilder()
	// worker-1's attempt began before worker-0's grant returned: they are
	// concurrent, so a lower fence for worker-1 is not a violation.
	b.grant("worker-0", 0, 2*ms, 500*ms, 3*ms, 4*ms, 7)
	b.grant("worker-1", 1*ms, 5*ms, 500*ms, 6*ms, 7*ms, 6)
	wantCounts(t, b.check(t), [4]int{})
}

func TestCheck_withoutFencesFenceOrderDoesNotApply(t *testing.T) {
	b := newBuilder()
	b.grant("worker-0", 0, 1*ms, 500*ms, 2*ms, 3*ms, 0)
	b.grant("worker-1", 4*ms, 5*ms, 500*ms, 6*ms, 7*ms, 0)
	r := b.check(t)
	wantCounts(t, r, [4]int{})
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
	wantCounts(t, b.check(t), [4]int{})
	b.grant("worker-2", 20*ms, 21*ms, 100*ms, 30*ms, 31*ms, 3)
	wantCounts(t, b.check(t), [4]int{1, 1, 0, 1})
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
	wantCounts(t, r, [4]int{1, 1, 0, 0})
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
	wantCounts(t, b.check(t), [4]int{1, 1, 0, 0})
}
