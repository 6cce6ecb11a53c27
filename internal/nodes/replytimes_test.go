package nodes

import (
	"testing"
	"time"
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
