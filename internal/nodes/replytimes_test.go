package nodes

import (
	"context"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
)

func TestReplyTimes_remembersTheLongestAndForgetsIt(t *testing.T) {
	r := replyTimes{over: 25 * time.Millisecond}
	r.observe(20 * time.Millisecond)
	if got := r.recent(); got != 0 {
		t.Fatalf("a reply under the bound is remembered: %v", got)
	}
	r.observe(200 * time.Millisecond)
	r.observe(100 * time.Millisecond)
	if got := r.recent(); got <= 100*time.Millisecond || got > 200*time.Millisecond {
		t.Fatalf("recent %v after replies of 200 and 100 ms, want just under 200 ms", got)
	}
	// Two half-lives ago: a quarter is left.
	r.peak.Store(&replyPeak{took: 200 * time.Millisecond, at: time.Now().Add(-2 * replyHalfLife)})
	if got := r.recent(); got < 45*time.Millisecond || got > 50*time.Millisecond {
		t.Fatalf("recent %v two half-lives after 200 ms, want about 50 ms", got)
	}
	// A longer reply replaces what decayed; a shorter one does not.
	r.observe(40 * time.Millisecond)
	if got := r.recent(); got < 45*time.Millisecond {
		t.Fatalf("recent %v: a reply shorter than the decayed peak replaced it", got)
	}
	r.observe(80 * time.Millisecond)
	if got := r.recent(); got < 75*time.Millisecond || got > 80*time.Millisecond {
		t.Fatalf("recent %v after a reply of 80 ms, want about 80 ms", got)
	}
	// Decayed under the bound: forgotten.
	r.peak.Store(&replyPeak{took: 80 * time.Millisecond, at: time.Now().Add(-2 * replyHalfLife)})
	if got := r.recent(); got != 0 {
		t.Fatalf("recent %v once decayed to 20 ms, under the 25 ms bound; want 0", got)
	}
}

func TestReplyTimes_offRemembersNothing(t *testing.T) {
	var r replyTimes
	r.observe(time.Second)
	if got := r.recent(); got != 0 {
		t.Fatalf("recent %v with no bound set, want 0", got)
	}
}

// A Set remembers a node's late reply to a fan-out that was decided
// without it, and not replies in time.
func TestSet_remembersLateReplies(t *testing.T) {
	const pause = 150 * time.Millisecond
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	set := testSet(t, cluster)
	set.RememberReplies(25 * time.Millisecond)
	fanout := func(key string, paused ...int) {
		t.Helper()
		for _, i := range paused {
			if err := cluster.Node(i).Pause(); err != nil {
				t.Fatal(err)
			}
		}
		_, _, f := set.TrackedFanout(context.Background(), 50*time.Millisecond, setter(key, "tok"), nil, IsOne,
			func(ok, others int) bool { return ok+others >= 3 })
		if len(paused) > 0 {
			time.Sleep(pause) // the fault's length, not a wait for a result
		}
		for _, i := range paused {
			if err := cluster.Node(i).Resume(); err != nil {
				t.Fatal(err)
			}
		}
		if f == nil {
			return
		}
		landed := make(chan struct{})
		f.AfterLanding(func() { close(landed) })
		select {
		case <-landed:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the late reply never landed", key)
		}
	}
	fanout("warm")
	for deadline := time.Now().Add(10 * time.Second); set.RecentReplyTime() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the warm-up's reply time %v is never forgotten", set.RecentReplyTime())
		}
	}
	fanout("in-time")
	if got := set.RecentReplyTime(); got >= pause/2 {
		t.Errorf("replies in time: recent reply time %v, want under %v", got, pause/2)
	}
	fanout("late", 0)
	if got := set.RecentReplyTime(); got < pause*3/4 {
		t.Errorf("a node paused for %v: recent reply time %v, want at least %v", pause, got, pause*3/4)
	}
}

// A Set of one node counts a request that timed out as a reply that took
// its timeout, whether its Conn dropped the reply at the deadline or a
// late reply is still to come; a Set of several does not count a silent
// node (its late reply counts once it lands).
func TestSet_countsTimeoutsOfItsOnlyNode(t *testing.T) {
	for _, nodes := range []int{1, 3} {
		// Over several nodes, the timeout is long enough that no healthy
		// node's reply is remembered (half of it), even on a loaded host.
		timeout := 50 * time.Millisecond
		if nodes > 1 {
			timeout = time.Second
		}
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: nodes})
		set := testSet(t, cluster)
		set.RememberReplies(timeout / 2)
		if err := cluster.Node(0).Pause(); err != nil {
			t.Fatal(err)
		}
		results, _, _ := set.TrackedFanout(context.Background(), timeout, setter("k", "tok"), nil, IsOne,
			func(ok, others int) bool { return ok+others >= nodes })
		got := set.RecentReplyTime()
		if err := cluster.Node(0).Resume(); err != nil {
			t.Fatal(err)
		}
		if results[0].Outcome != Timeout {
			t.Fatalf("%d nodes: the paused node answered %v", nodes, results[0].Outcome)
		}
		if nodes == 1 && got < timeout-timeout/32 {
			t.Errorf("one node timed out: recent reply time %v, want at least %v", got, timeout-timeout/32)
		}
		if nodes > 1 && got != 0 {
			t.Errorf("one node of %d silent: recent reply time %v, want 0 until its reply lands", nodes, got)
		}
	}
}
