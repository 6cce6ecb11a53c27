package wait

import (
	"context"
	"slices"
	"sync"
)

// Sets are the turns of a client's goroutines waiting for sets of keys
// (the root package's AcquireAll): the client has one entry in each key's
// queue on the nodes, so of two calls whose sets share a key, the one that
// came later waits until the other ended. Calls whose sets share no key
// wait for nothing: a set waiting for a held key keeps no other set of the
// client waiting. As each call waits only for calls that came before it,
// no two wait for each other.
type Sets struct {
	mu    sync.Mutex
	calls []*setCall // waiting or under way, in the order they came
}

// setCall is one call's turn.
type setCall struct {
	keys    []string
	started bool          // its turn came
	ready   chan struct{} // closed when its turn comes
}

// Take waits until no call that came before shares a key with keys, or for
// ctx to end, and reports whether the turn came; the caller must then call
// the returned function once it no longer waits.
func (s *Sets) Take(ctx context.Context, keys []string) (giveBack func(), taken bool) {
	c := &setCall{keys: keys, ready: make(chan struct{})}
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.startLocked()
	s.mu.Unlock()
	giveBack = func() { s.leave(c) }
	select {
	case <-c.ready:
		return giveBack, true
	case <-ctx.Done():
		giveBack()
		return nil, false
	}
}

// Len returns the number of calls waiting or under way.
func (s *Sets) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

// leave ends c's turn, or its wait for one, and starts the calls that
// waited for it only.
func (s *Sets) leave(c *setCall) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.calls, c); i >= 0 {
		s.calls = slices.Delete(s.calls, i, i+1)
		s.startLocked()
	}
}

// startLocked starts every waiting call that shares no key with a call
// that came before it.
func (s *Sets) startLocked() {
	for i, c := range s.calls {
		if !c.started && !s.sharesEarlierLocked(i) {
			c.started = true
			close(c.ready)
		}
	}
}

// sharesEarlierLocked reports whether the call at i shares a key with a
// call before it.
func (s *Sets) sharesEarlierLocked(i int) bool {
	for _, earlier := range s.calls[:i] {
		for _, k := range s.calls[i].keys {
			if slices.Contains(earlier.keys, k) {
				return true
			}
		}
	}
	return false
}
