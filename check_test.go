package redlock_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// Check answers, by a quorum, whether a token or a fencing token is the
// current holder's: while held, not after a release or a take-over, and
// for a reader by its token.
func TestCheck(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		c := newClient(t, cluster, a, &redlock.Options{NodeTimeout: 300 * time.Millisecond, Owner: "checked"})
		lock, err := c.TryAcquire(bg, "res")
		if err != nil {
			t.Fatal(err)
		}
		waitForKey(t, cluster, "res", lock.Token())
		r, err := c.Check(bg, "res", lock.Token())
		if err != nil || !r.Current || r.Nodes != 3 || r.Answered != 3 || r.Holder.Token != lock.Token() || r.Holder.Owner != "checked" ||
			r.Fence != lock.Fence() || r.Took <= 0 || r.Started.IsZero() {
			t.Errorf("Check of the holder = %+v, %v", r, err)
		}
		if r, err := c.CheckFence(bg, "res", lock.Fence()); err != nil || !r.Current {
			t.Errorf("CheckFence of the holder's fence = %+v, %v", r, err)
		}
		if r, err := c.CheckFence(bg, "res", lock.Fence()-1); err != nil || r.Current {
			t.Errorf("CheckFence of an older fence = %+v, %v", r, err)
		}
		if r, err := c.Check(bg, "res", "someone-else"); err != nil || r.Current || r.Holder.Token != lock.Token() {
			t.Errorf("Check of another token = %+v, %v", r, err)
		}
		if _, err := c.ForceRelease(bg, "res", "ops"); err != nil {
			t.Fatal(err)
		}
		next, err := c.TryAcquire(bg, "res")
		if err != nil {
			t.Fatal(err)
		}
		waitForKey(t, cluster, "res", next.Token())
		if r, err := c.Check(bg, "res", lock.Token()); err != nil || r.Current || r.Holder.Token != next.Token() || r.Fence != next.Fence() {
			t.Errorf("Check of a holder taken over = %+v, %v; want the next holder, fence %d", r, err, next.Fence())
		}
		if r, err := c.CheckFence(bg, "res", lock.Fence()); err != nil || r.Current {
			t.Errorf("CheckFence of a holder taken over = %+v, %v", r, err)
		}
		next.Release(bg)
		if r, err := c.Check(bg, "res", next.Token()); err != nil || r.Current || r.Holder != (redlock.Grant{}) {
			t.Errorf("Check after the release = %+v, %v", r, err)
		}

		reader, err := c.TryAcquire(bg, "doc", redlock.WithShared())
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(2 * time.Second)
		for r, err = c.Check(bg, "doc", reader.Token()); r.Nodes < 3 && time.Now().Before(deadline); r, err = c.Check(bg, "doc", reader.Token()) {
			time.Sleep(5 * time.Millisecond)
		}
		if err != nil || !r.Current || r.Nodes != 3 || !r.Shared {
			t.Errorf("Check of a reader = %+v, %v; want current, shared", r, err)
		}
		if r, err := c.CheckFence(bg, "doc", reader.Fence()); err != nil || r.Current || !r.Shared {
			t.Errorf("CheckFence of a reader's fence = %+v, %v; want not current, shared (a reader is checked by its token)", r, err)
		}
		if r, err := c.Check(bg, "res", "nobody"); err != nil || r.Shared {
			t.Errorf("Check of a free key = %+v, %v; want not shared", r, err)
		}
		if _, err := c.Check(bg, "", "x"); !errors.Is(err, redlock.ErrInvalidKey) {
			t.Errorf("Check of an empty key: %v, want ErrInvalidKey", err)
		}
	})
}

// With too few nodes answering, Check knows nothing: ErrNotChecked.
func TestCheck_tooFewNodes(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		c := newClient(t, cluster, a, &redlock.Options{NodeTimeout: 300 * time.Millisecond})
		lock, err := c.TryAcquire(bg, "res")
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range []int{1, 2} {
			if err := cluster.Node(i).Kill(); err != nil {
				t.Fatal(err)
			}
		}
		r, err := c.Check(bg, "res", lock.Token())
		if !errors.Is(err, redlock.ErrNotChecked) || r.Current || r.Answered != 1 {
			t.Errorf("Check with 2 of 3 nodes down = %+v, %v; want ErrNotChecked", r, err)
		}
		// The error says what each node answered: the refused connections
		// are errors, not answers too slow to count.
		var qe *redlock.QuorumError
		if !errors.As(err, &qe) || len(qe.Nodes) != 3 || qe.OK != 1 || qe.Quorum != 2 {
			t.Fatalf("Check's error = %#v, want a QuorumError with 3 nodes, 1 answered of 2 needed", err)
		}
		if qe.Nodes[0].Outcome != redlock.OutcomeOK || qe.Nodes[1].Outcome != redlock.OutcomeError || qe.Nodes[2].Outcome != redlock.OutcomeError {
			t.Errorf("Check's nodes = %+v, want the first answered and the killed ones failed", qe.Nodes)
		}
		if msg := err.Error(); !strings.Contains(msg, "answered on 1/3 nodes, 2 needed") || strings.Contains(msg, "within") {
			t.Errorf("Check's error says %q, want each node's outcome", msg)
		}
	})
}

// A lock renewed for longer than its fencing counter first lasted (its TTL
// plus the recovery delay) keeps the counter: its fencing token stays
// current for CheckFence and Inspect for as long as it holds the lock.
func TestCheckFence_renewedLockKeepsItsCounter(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		const ttl, recovery = time.Second, time.Second
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		c := newClient(t, cluster, a, &redlock.Options{TTL: ttl, RecoveryDelay: recovery, NodeTimeout: 100 * time.Millisecond})
		lock, err := c.TryAcquire(bg, "res", redlock.WithAutoRenew())
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Release(bg)
		// Checked throughout twice the counter's first lifetime.
		for end := time.Now().Add(2 * (ttl + recovery)); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			select {
			case <-lock.Done():
				t.Fatalf("the lock was lost: %v", lock.Err())
			default:
			}
			r, err := c.CheckFence(bg, "res", lock.Fence())
			if err != nil || !r.Current || r.Fence != lock.Fence() {
				t.Fatalf("CheckFence of a renewed lock's token %d = %+v, %v; want current", lock.Fence(), r, err)
			}
		}
	})
}
