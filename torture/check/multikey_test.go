package check_test

import (
	"strings"
	"testing"

	"github.com/redlock-go/redlock/torture/check"
	"github.com/redlock-go/redlock/torture/history"
)

// setsClean is a correct history of locks taken in sets: worker-0 holds
// {a, b} and worker-1 {c, d} at once, each writing the register of every
// name it holds with that name's fence; worker-2 takes {c, b} once both
// released, in its own order, and worker-3 {d, a, b} after worker-2's
// release call and worker-1's set, which it never released, expired.
func setsClean() *builder {
	b := newBuilder()
	b.holdAll("worker-0", []string{"b", "a"}, 1*ms, 2*ms, 500*ms, 10*ms, 11*ms, 1, 1)
	b.holdAll("worker-1", []string{"c", "d"}, 1*ms, 3*ms, 30*ms, 0, 0, 1, 1)
	b.fail("worker-2", 4*ms, 5*ms) // b and c held
	for _, reg := range []string{"a", "b"} {
		b.writeTo(reg, "worker-0", 6*ms, -1, 1)
	}
	for _, reg := range []string{"c", "d"} {
		b.writeTo(reg, "worker-1", 7*ms, -1, 1)
	}
	b.holdAll("worker-2", []string{"c", "b"}, 30*ms, 31*ms, 530*ms, 40*ms, 41*ms, 2, 2)
	b.writeTo("b", "worker-2", 35*ms, -1, 2)
	b.writeTo("c", "worker-2", 35*ms, -1, 2)
	b.holdAll("worker-3", []string{"d", "a", "b"}, 39*ms, 40*ms+500_000, 540*ms, 50*ms, 51*ms, 2, 2, 3)
	for _, reg := range []string{"a", "b", "d"} {
		b.writeTo(reg, "worker-3", 45*ms, -1, 2)
	}
	return b
}

func TestCheck_locksOfASetAreCheckedAsLocksOfTheirOwn(t *testing.T) {
	r := setsClean().check(t)
	// As one lock, the sets held together would overlap, their fences
	// repeat and their registers' writes look lost.
	wantCounts(t, r, [5]int{})
	if r.Grants != 9 || r.Attempts != 5 || r.Writes != 9 {
		t.Fatalf("Grants = %d, Attempts = %d, Writes = %d; want 9, 5, 9", r.Grants, r.Attempts, r.Writes)
	}
	for _, g := range check.Grants(history.Ops(setsClean().sorted())) {
		if g.Name != g.Key || g.Token == "" || g.Fence == 0 {
			t.Fatalf("grant %+v: want its own name, key, token and fence", g)
		}
		if g.Worker == "worker-0" && g.Released != 10*ms || g.Worker == "worker-1" && g.Released != 0 {
			t.Fatalf("grant %+v: released at %d", g, g.Released)
		}
	}
}

func TestCheck_setsSharingAKeyHeldTogetherAreCaught(t *testing.T) {
	b := setsClean()
	// worker-4 takes {a, c} while worker-3 holds a (40.5-50 ms); c is
	// free since worker-2's release.
	b.holdAll("worker-4", []string{"a", "c"}, 44*ms, 45*ms, 545*ms, 48*ms, 49*ms, 3, 3)
	r := b.check(t)
	wantCounts(t, r, [5]int{1, 1, 0, 0, 0})
	for _, v := range r.Violations {
		if !strings.HasPrefix(v.Detail, "a: ") {
			t.Fatalf("%s violation %q is not about a", v.Checker, v.Detail)
		}
	}
}

func TestCheck_lostUpdateOnARegisterOfASetIsCaught(t *testing.T) {
	b := setsClean()
	// worker-0 writes b late, from the version before worker-2's and
	// worker-3's updates.
	b.writeTo("b", "worker-0", 60*ms, 1, 1)
	r := b.check(t)
	wantCounts(t, r, [5]int{0, 0, 0, 2, 0})
	if v := r.Violations[0]; !strings.Contains(v.Detail, "register b") {
		t.Fatalf("violation %q, want one on register b", v.Detail)
	}
}
