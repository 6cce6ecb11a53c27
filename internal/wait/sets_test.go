package wait

import (
	"context"
	"testing"
	"time"
)

// A set's turn waits only for earlier calls that share a key with it, in
// the order the calls came; a call that gives up its wait lets the later
// ones go.
func TestSets_waitOnlyForEarlierSharingCalls(t *testing.T) {
	var s Sets
	bg := context.Background()
	ab, ok := s.Take(bg, []string{"a", "b"})
	if !ok {
		t.Fatal("the first call did not get its turn")
	}
	type turn struct {
		giveBack func()
		ok       bool
	}
	take := func(ctx context.Context, keys ...string) <-chan turn {
		got := make(chan turn, 1)
		go func() {
			g, ok := s.Take(ctx, keys)
			got <- turn{g, ok}
		}()
		return got
	}
	waitLen := func(n int) {
		t.Helper()
		for end := time.Now().Add(5 * time.Second); s.Len() != n; time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%d calls, want %d", s.Len(), n)
			}
		}
	}
	pending := func(c <-chan turn, what string) {
		t.Helper()
		select {
		case <-c:
			t.Fatalf("%s got its turn", what)
		default:
		}
	}
	got := func(c <-chan turn, what string) turn {
		t.Helper()
		select {
		case tr := <-c:
			if !tr.ok {
				t.Fatalf("%s: no turn", what)
			}
			return tr
		case <-time.After(5 * time.Second):
			t.Fatalf("%s did not get its turn within 5 s", what)
		}
		return turn{}
	}

	ctx, cancel := context.WithCancel(bg)
	bc := take(ctx, "b", "c")
	waitLen(2)
	c := take(bg, "c")
	waitLen(3)
	d := got(take(bg, "d"), "a set sharing no key")
	pending(bc, "a set sharing b with a call under way")
	pending(c, "a set sharing c with an earlier waiting call")

	cancel()
	if tr := <-bc; tr.ok {
		tr.giveBack()
		t.Fatal("a call whose ctx ended before its turn got it")
	}
	got(c, "a set whose earlier sharing call gave up").giveBack()
	d.giveBack()

	bc2 := take(bg, "b", "c")
	waitLen(2)
	pending(bc2, "a set sharing b with a call under way")
	ab()
	got(bc2, "a set whose earlier sharing call ended").giveBack()
	if n := s.Len(); n != 0 {
		t.Errorf("%d calls left, want 0", n)
	}
}
