package redlock

import "testing"

// A permit claimed by one call of a client is no other call's to ask for
// until that call ends its claims; the end of a claim wakes the calls
// waiting for one only when the permit is not held here, as the call that
// ends it took it otherwise, and the others wait for its release instead.
func TestPermitClaims_oneCallPerPermit(t *testing.T) {
	var pc permitClaims
	a, b := &permits{}, &permits{}
	if !pc.claim("p1", a) || !pc.claim("p1", a) {
		t.Fatal("a call cannot claim a free permit, or its own")
	}
	if pc.claim("p1", b) {
		t.Fatal("a second call claimed a permit another call claimed")
	}
	woken := false
	since := pc.ended.generation()
	stop := pc.ended.watch(since, func() { woken = true })
	defer stop()
	pc.release(a, []string{"p1"}, func(string) bool { return true })
	if woken {
		t.Fatal("the end of a claim on a permit now held here woke a waiting call")
	}
	if !pc.claim("p1", b) {
		t.Fatal("a claim that ended still keeps other calls from the permit")
	}
	pc.release(b, []string{"p1"}, func(string) bool { return false })
	if !woken {
		t.Fatal("the end of a claim on a permit not held here woke no waiting call")
	}
	late := false
	pc.ended.watch(since, func() { late = true })
	if !late {
		t.Fatal("a watch begun after the change it waits for was not told at once")
	}
}
