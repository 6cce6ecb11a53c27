package nodes

import (
	"context"
	"testing"
	"time"
)

// A caller's requests whose deadlines fall within the slack share one
// context, an acquisition's and a release's contexts each keep theirs, and
// a context is never shared past its own deadline or across callers.
func TestCallerDeadline_sharesWithinTheSlack(t *testing.T) {
	var d callerDeadline
	caller, cancel := context.WithCancel(context.Background())
	defer cancel()
	uncancelled := context.WithoutCancel(caller)
	now := time.Now()
	timeout := 50 * time.Millisecond
	first := d.until(caller, now.Add(timeout), timeout)
	release := d.until(uncancelled, now.Add(timeout), timeout)
	if release == first {
		t.Fatal("a release shares the context of another parent")
	}
	if again := d.until(caller, now.Add(timeout+maxInlineSlack/2), timeout); again != first {
		t.Error("a request half a slack later got a context of its own")
	}
	if again := d.until(context.WithoutCancel(caller), now.Add(timeout+maxInlineSlack/2), timeout); again != release {
		t.Error("a release half a slack later got a context of its own")
	}
	if later := d.until(caller, now.Add(timeout+2*maxInlineSlack), timeout); later == first {
		t.Error("a request two slacks later shares a context that ends too early")
	}
	if earlier := d.until(caller, now.Add(timeout-time.Millisecond), timeout); earlier == first {
		t.Error("a request with an earlier deadline shares a context that ends after it")
	}
	other, cancelOther := context.WithCancel(context.Background())
	defer cancelOther()
	if d.until(other, now.Add(timeout), timeout) == first {
		t.Error("another caller shares the context")
	}
	short, cancelShort := context.WithTimeout(caller, time.Millisecond)
	defer cancelShort()
	if got := d.until(short, now.Add(timeout), timeout); got != short {
		t.Error("a caller whose context ends first did not get it back")
	}
	if dl, _ := first.Deadline(); !dl.Equal(now.Add(timeout)) {
		t.Errorf("deadline %v, want %v", dl, now.Add(timeout))
	}
}

// A detached callerDeadline's contexts keep the caller's values, end at
// their own deadline, and neither at the caller's earlier deadline nor at
// its cancellation.
func TestCallerDeadline_detachedIgnoresTheCallersEnd(t *testing.T) {
	d := callerDeadline{detached: true}
	type key struct{}
	caller, cancel := context.WithTimeout(context.WithValue(context.Background(), key{}, "v"), time.Millisecond)
	deadline := time.Now().Add(time.Hour)
	ctx := d.until(caller, deadline, time.Hour)
	if ctx == caller {
		t.Fatal("got the caller's context, which ends first")
	}
	cancel()
	if err := ctx.Err(); err != nil {
		t.Errorf("ended with the caller: %v", err)
	}
	if dl, _ := ctx.Deadline(); !dl.Equal(deadline) {
		t.Errorf("deadline %v, want %v", dl, deadline)
	}
	if ctx.Value(key{}) != "v" {
		t.Error("the caller's value is lost")
	}
}
