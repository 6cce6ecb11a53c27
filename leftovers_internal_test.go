package redlock

import (
	"fmt"
	"testing"
)

// The leftovers keep at most maxLeftovers tokens, the newest; take returns
// a key's tokens that a refusing node may hold, and only those; a token
// answered on every node it missed is forgotten.
func TestLeftovers_boundTakeAndAnswer(t *testing.T) {
	var s leftovers
	for i := range maxLeftovers + 2 {
		s.add("k", fmt.Sprint(i), []bool{true, false, i%2 == 0})
	}
	if n := s.count.Load(); n != maxLeftovers {
		t.Fatalf("%d remembered, want %d", n, maxLeftovers)
	}
	if s.list[0].token != "2" {
		t.Errorf("oldest remembered %q, want 2: the two oldest forgotten", s.list[0].token)
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
	s.add("k", "x", []bool{true, true})
	s.answered("k", "x", 0)
	if got := s.take("k", []bool{false, true}); len(got) != 1 || got[0].token != "x" || got[0].missed[0] {
		t.Errorf("after node 0 answered x: took %+v, want x missed on node 1 only", got)
	}
}
