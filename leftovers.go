package redlock

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/redlock-go/redlock/internal/nodes"
)

// Leftovers are the tokens of this client's releases that a node missed in
// time: a released lock's, or a failed attempt's.
//
// A node that stops answering for longer than the background finishing of
// releases lasts (finishMissed) still runs, once it answers again, what was
// sent to it before: an attempt that failed long ago may then grant the key
// there, to nobody, after the release meant for it was given up or ran
// first (requests on different connections of a pool have no order). The
// key is then held on that node until its TTL passes: with a lone node, for
// every client. So the client remembers the tokens, and when one of its
// attempts on the key is refused by a node that missed a release of them,
// because the key is held there, it sends those releases there again
// (clearLeftovers): a token of its own goes at once, and the next try is
// granted. A token stays remembered until a release of it is answered
// there, up to maxLeftovers tokens, the oldest forgotten first.
type leftovers struct {
	mu    sync.Mutex
	count atomic.Int32 // len(list), read without mu on every failed attempt
	list  []leftover   // oldest first
}

// maxLeftovers bounds the tokens remembered: a node that stopped answering
// makes every release miss it.
const maxLeftovers = 256

// leftover is a token whose release some nodes missed.
type leftover struct {
	key, token string
	missed     []bool // by node
}

// add remembers that the nodes marked in missed may still hold key for token.
func (s *leftovers) add(key, token string, missed []bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.list) == maxLeftovers {
		s.list = append(s.list[:0], s.list[1:]...)
	}
	s.list = append(s.list, leftover{key: key, token: token, missed: missed})
	s.count.Store(int32(len(s.list)))
}

// answered forgets that node may hold key for token: a release of it there
// was answered.
func (s *leftovers) answered(key, token string, node int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.list {
		lo := &s.list[i]
		if lo.key == key && lo.token == token {
			lo.missed[node] = false
			if !anyMissed(lo.missed) {
				s.list = append(s.list[:i], s.list[i+1:]...)
				s.count.Store(int32(len(s.list)))
			}
			return
		}
	}
}

// take removes and returns the tokens of key that a node marked in held may
// hold, each with the nodes where it may.
func (s *leftovers) take(key string, held []bool) []leftover {
	if s.count.Load() == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var found []leftover
	kept := s.list[:0]
	for _, lo := range s.list {
		if lo.key == key && overlap(lo.missed, held) {
			found = append(found, lo)
		} else {
			kept = append(kept, lo)
		}
	}
	clear(s.list[len(kept):])
	s.list = kept
	s.count.Store(int32(len(s.list)))
	return found
}

// clearLeftovers sends again the releases of key that the nodes refusing an
// attempt on it because it is held (results) missed before, to those
// nodes, and waits for them up to the node timeout (see leftovers).
func (c *Client) clearLeftovers(ctx context.Context, key string, results []NodeResult) {
	if c.leftovers.count.Load() == 0 {
		return
	}
	held := make([]bool, len(results))
	for i, r := range results {
		held[i] = r.Outcome == OutcomeHeld
	}
	found := c.leftovers.take(key, held)
	var wg sync.WaitGroup
	for _, lo := range found {
		wg.Go(func() { c.releaseLeftover(ctx, lo, held) })
	}
	wg.Wait()
}

// releaseLeftover sends the release of lo's token to the nodes that missed
// it and refuse the key (held), and remembers it again where it went
// unanswered.
func (c *Client) releaseLeftover(ctx context.Context, lo leftover, held []bool) {
	req := releaser(lo.key, lo.token)
	req.Local = func(node int) (any, bool) { return int64(0), !(lo.missed[node] && held[node]) }
	results, _ := c.fanout(nodes.Uncancelled(ctx), c.requestTimeout(), req, nodes.IsOne, func(int, int) bool { return false })
	for i, r := range results {
		if lo.missed[i] && held[i] && answeredRelease(r) {
			lo.missed[i] = false
		}
	}
	if anyMissed(lo.missed) {
		c.leftovers.add(lo.key, lo.token, lo.missed)
	}
}

// anyMissed reports whether a node is marked in missed.
func anyMissed(missed []bool) bool {
	for _, m := range missed {
		if m {
			return true
		}
	}
	return false
}

// overlap reports whether a node is marked in both a and b.
func overlap(a, b []bool) bool {
	for i := range a {
		if a[i] && b[i] {
			return true
		}
	}
	return false
}
