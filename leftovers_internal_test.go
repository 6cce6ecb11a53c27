package redlock

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// The leftovers keep at most maxLeftovers tokens, the oldest, until their
// time passes; take returns a key's tokens that a refusing node may hold,
// and only those; a token answered on every node it missed is forgotten.
func TestLeftovers_boundTakeAndAnswer(t *testing.T) {
	var s leftovers
	for i := range maxLeftovers + 2 {
		s.add("k", fmt.Sprint(i), []bool{true, false, i%2 == 0}, time.Second)
	}
	if n := s.count.Load(); n != maxLeftovers {
		t.Fatalf("%d remembered, want %d", n, maxLeftovers)
	}
	if first, last := s.list[0].token, s.list[len(s.list)-1].token; first != "0" || last != fmt.Sprint(maxLeftovers-1) {
		t.Errorf("remembered %s to %s, want the oldest: 0 to %d", first, last, maxLeftovers-1)
	}
	if got := s.take("other", []bool{true, true, true}); got != nil {
		t.Errorf("took %d tokens of another key", len(got))
	}
	if got := s.take("k", []bool{false, true, false}); got != nil {
		t.Errorf("took %d tokens for a node that missed none", len(got))
	}
	got := s.take("k", []bool{false, false, true})
	if len(got) != maxLeftovers/2 || int(s.count.Load()) != maxLeftovers/2 {
		t.Fatalf("took %d of node 2's tokens, %d left; want %d each", len(got), s.count.Load(), maxLeftovers/2)
	}
	s.answered("k", "3", 0)
	if n := s.count.Load(); n != maxLeftovers/2-1 {
		t.Errorf("%d remembered after token 3 answered, want %d", n, maxLeftovers/2-1)
	}
	s.add("k", "x", []bool{true, true}, time.Second)
	s.answered("k", "x", 0)
	if got := s.take("k", []bool{false, true}); len(got) != 1 || got[0].token != "x" || got[0].missed[0] {
		t.Errorf("after node 0 answered x: took %+v, want x missed on node 1 only", got)
	}
}

// A token is remembered for leftoverLives TTLs, at least minLeftoverLife;
// once its time passed, take forgets it, and a full list makes room for a
// new token by forgetting those whose time passed.
func TestLeftovers_forgottenOnceTheirTimePassed(t *testing.T) {
	var s leftovers
	s.add("k", "long", []bool{true}, 20*time.Second)
	if life := time.Until(s.list[0].until); life < 199*time.Second || life > 200*time.Second {
		t.Errorf("a 20s TTL's token remembered for %v, want 200s", life)
	}
	s.add("k", "short", []bool{true}, time.Millisecond)
	if life := time.Until(s.list[1].until); life < minLeftoverLife-time.Second || life > minLeftoverLife {
		t.Errorf("a 1ms TTL's token remembered for %v, want %v", life, minLeftoverLife)
	}
	s.list[1].until = time.Now().Add(-time.Millisecond)
	if got := s.take("k", []bool{true}); len(got) != 1 || got[0].token != "long" || s.count.Load() != 0 {
		t.Errorf("took %+v, %d left; want long alone, none left", got, s.count.Load())
	}
	for i := range maxLeftovers {
		s.add("k", fmt.Sprint(i), []bool{true}, time.Second)
	}
	s.list[5].until = time.Now().Add(-time.Millisecond)
	s.add("k", "new", []bool{true}, time.Second)
	if n := s.count.Load(); n != maxLeftovers || s.list[len(s.list)-1].token != "new" {
		t.Errorf("%d remembered, the last %q; want %d, the last new", n, s.list[len(s.list)-1].token, maxLeftovers)
	}
}

// The first leftover starts a sweep and later ones do not, until the sweep
// finds none left and ends; missedNodes tells which nodes missed a
// release, on returns a node's tokens oldest first.
func TestLeftovers_sweepStartsAndEnds(t *testing.T) {
	var s leftovers
	if !s.add("k", "a", []bool{true, false, false}, time.Second) {
		t.Error("the first leftover started no sweep")
	}
	if s.add("k", "b", []bool{false, false, true}, time.Second) {
		t.Error("a second leftover started a second sweep")
	}
	if got := s.missedNodes(3); !slices.Equal(got, []bool{true, false, true}) {
		t.Errorf("missedNodes = %v, want [true false true]", got)
	}
	if got := s.on(2, 10); len(got) != 1 || got[0].token != "b" {
		t.Errorf("node 2's leftovers: %+v, want b", got)
	}
	s.answered("k", "a", 0)
	s.answered("k", "b", 2)
	if got := s.missedNodes(3); got != nil {
		t.Errorf("missedNodes = %v with none left, want nil", got)
	}
	if !s.add("k", "c", []bool{true}, time.Second) {
		t.Error("a leftover after the sweep ended started none")
	}
}
