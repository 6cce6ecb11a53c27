package redlock

import "testing"

// A permit claimed by one call of a client is no other call's to ask for
// until that call ends its claims.
func TestPermitClaims_oneCallPerPermit(t *testing.T) {
	var pc permitClaims
	a, b := &permits{}, &permits{}
	if !pc.claim("p1", a) || !pc.claim("p1", a) {
		t.Fatal("a call cannot claim a free permit, or its own")
	}
	if pc.claim("p1", b) || pc.freeFor("p1", b) {
		t.Fatal("a second call claimed a permit another call claimed")
	}
	pc.release(a, []string{"p1"})
	if !pc.claim("p1", b) {
		t.Fatal("a claim that ended still keeps other calls from the permit")
	}
}

// The end of a claim wakes the oldest call waiting for one, and only it;
// a younger one hears of it when it next watches, at once.
func TestPermitClaims_endWakesTheOldestWaiter(t *testing.T) {
	var pc permitClaims
	holder := &permits{}
	pc.claim("p1", holder)
	since := pc.ended.generation()
	var woken []string
	stopYoung := pc.ended.watch(since, 9, func() { woken = append(woken, "young") })
	stopOld := pc.ended.watch(since, 2, func() { woken = append(woken, "old") })
	defer stopYoung()
	defer stopOld()
	pc.release(holder, []string{"p1"})
	if len(woken) != 1 || woken[0] != "old" {
		t.Fatalf("woken %v, want the oldest waiter alone", woken)
	}
	stopYoung()
	pc.ended.watch(since, 9, func() { woken = append(woken, "young") })
	if len(woken) != 2 {
		t.Fatal("a watch begun after the change it waits for was not told at once")
	}
}
