package redlock

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

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
// there, or for leftoverLives TTLs (at least minLeftoverLife). At most
// maxLeftovers are: past that, a new one is forgotten, not an old one, as
// the first attempts a silent node got are the ones it runs first when it
// answers again, and one of them is what holds the key.
//
// Nor do the leftovers wait for a refusal: a sweep (sweepLeftovers) runs
// while any is remembered, and sends them again to a node soon after it
// answers again, so that the keys it holds for nobody are free for every
// client, not only for this one once it asks for them.
type leftovers struct {
	mu    sync.Mutex
	count atomic.Int32 // len(list), read without mu on every failed attempt
	list  []leftover   // oldest first
	// sweeping is whether a sweep runs: set with the first leftover,
	// cleared by the sweep once none is left.
	sweeping bool
}

const (
	// maxLeftovers bounds the tokens remembered: a node that stopped
	// answering makes every release miss it.
	maxLeftovers = 1024
	// leftoverLives and minLeftoverLife bound how long a token is
	// remembered: a node silent for longer runs the attempt when it
	// answers again, and the key is held there for a TTL.
	leftoverLives   = 10
	minLeftoverLife = time.Minute
	// leftoverSweep is how often the sweep asks the nodes that missed
	// releases whether they answer again.
	leftoverSweep = time.Second
	// sweepWait is how long after a node answered again the sweep waits
	// before it sends the node its releases: the node runs what it was
	// sent before it went silent first, within moments.
	sweepWait = leftoverSweep / 2
	// sweepBatch is how many releases the sweep sends a node at once.
	sweepBatch = 32
)

// leftover is a token whose release some nodes missed.
type leftover struct {
	key, token string
	missed     []bool    // by node
	until      time.Time // when it is forgotten
}

// add remembers, for leftoverLives times ttl, that the nodes marked in
// missed may still hold key for token, and reports whether a sweep must
// start (see readd).
func (s *leftovers) add(key, token string, missed []bool, ttl time.Duration) (sweep bool) {
	return s.readd(leftover{key: key, token: token, missed: missed, until: time.Now().Add(max(leftoverLives*ttl, minLeftoverLife))})
}

// readd remembers lo, unless maxLeftovers are remembered that are still
// to be. It reports whether a sweep must start: lo is remembered, and none
// runs.
func (s *leftovers) readd(lo leftover) (sweep bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.list) == maxLeftovers {
		s.expire()
		if len(s.list) == maxLeftovers {
			return false
		}
	}
	s.list = append(s.list, lo)
	s.count.Store(int32(len(s.list)))
	sweep = !s.sweeping
	s.sweeping = true
	return sweep
}

// expire forgets the leftovers whose time passed; the caller holds mu.
func (s *leftovers) expire() {
	now := time.Now()
	s.list = slices.DeleteFunc(s.list, func(lo leftover) bool { return now.After(lo.until) })
	s.count.Store(int32(len(s.list)))
}

// missedNodes returns, by node (of n), whether a leftover that node missed
// is remembered, once those whose time passed are forgotten; nil when none
// is left, and the sweep then ends (the next leftover starts another).
func (s *leftovers) missedNodes(n int) []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	if len(s.list) == 0 {
		s.sweeping = false
		return nil
	}
	missed := make([]bool, n)
	for _, lo := range s.list {
		for i, m := range lo.missed {
			missed[i] = missed[i] || m
		}
	}
	return missed
}

// on returns the keys and tokens of the leftovers that node missed, oldest
// first, at most limit of them.
func (s *leftovers) on(node, limit int) []leftover {
	s.mu.Lock()
	defer s.mu.Unlock()
	var found []leftover
	for _, lo := range s.list {
		if len(found) == limit {
			break
		}
		if lo.missed[node] {
			found = append(found, leftover{key: lo.key, token: lo.token})
		}
	}
	return found
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
			if !anyMarked(lo.missed) {
				s.list = append(s.list[:i], s.list[i+1:]...)
				s.count.Store(int32(len(s.list)))
			}
			return
		}
	}
}

// take removes and returns the tokens of key that a node marked in held may
// hold, each with the nodes where it may, and forgets those whose time
// passed.
func (s *leftovers) take(key string, held []bool) []leftover {
	if s.count.Load() == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var found []leftover
	kept := s.list[:0]
	now := time.Now()
	for _, lo := range s.list {
		if now.After(lo.until) {
			continue
		}
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

// rememberLeftovers remembers token among the leftovers on the nodes that
// did not answer its release (results): they may hold key for it, now or
// once they run what was sent to them, or the release never left (a node's
// queue of calls was full).
func (c *Client) rememberLeftovers(key, token string, ttl time.Duration, results []NodeResult) {
	if !slices.ContainsFunc(results, func(r NodeResult) bool { return !answeredRelease(r) }) {
		return // every release: no allocation
	}
	missed := make([]bool, len(results))
	for i, r := range results {
		missed[i] = !answeredRelease(r)
	}
	if anyMarked(missed) && c.leftovers.add(key, token, missed, ttl) {
		go c.sweepLeftovers()
	}
}

// clearLeftovers sends again the releases of key that the nodes refusing an
// attempt on it because it is held (results) missed before, to those
// nodes (see leftovers). It waits for them up to the node timeout, or,
// with background (the attempt won on the other nodes), not at all.
func (c *Client) clearLeftovers(ctx context.Context, key string, results []NodeResult, background bool) {
	if c.leftovers.count.Load() == 0 {
		return
	}
	held := make([]bool, len(results))
	for i, r := range results {
		held[i] = r.Outcome == OutcomeHeld
	}
	switch {
	case !anyMarked(held):
	case background:
		go c.releaseLeftovers(context.WithoutCancel(ctx), key, held)
	default:
		c.releaseLeftovers(ctx, key, held)
	}
}

// clearLeftoversLate is clearLeftovers for the nodes of a granted attempt
// that answered it after it was decided (unfinished, its requests still
// under way), refusing it (replies), once they all answered.
func (c *Client) clearLeftoversLate(key string, unfinished *nodes.Flight, replies []acquireReply) {
	if unfinished == nil || c.leftovers.count.Load() == 0 {
		return
	}
	unfinished.AfterLanding(func() {
		held := make([]bool, len(replies))
		for i, r := range replies {
			held[i] = refusedLate(r)
		}
		if anyMarked(held) {
			go c.releaseLeftovers(context.Background(), key, held)
		}
	})
}

// releaseLeftovers sends again the releases of key that the nodes marked in
// held missed before, to those nodes, and waits for them up to the node
// timeout.
func (c *Client) releaseLeftovers(ctx context.Context, key string, held []bool) {
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
	if anyMarked(lo.missed) && c.leftovers.readd(lo) {
		go c.sweepLeftovers()
	}
}

// sweepLeftovers sends the leftovers' releases again to the nodes that
// missed them, once each answers again, while any is remembered: every
// leftoverSweep it asks each such node, by the release of its oldest
// leftover there, whether it answers; at the first round once sweepWait
// passed since the node did (by then the node has run what it was sent
// before), it sends
// the releases of all its leftovers, and a release answered there forgets
// the token there. A node swept is asked again before its next sweep. It
// ends once no leftover is left, or when the Client closes: it sends
// nothing after that.
func (c *Client) sweepLeftovers() {
	t := time.NewTicker(leftoverSweep)
	defer t.Stop()
	// back is when each node answered the release that asked it, zero
	// while it has not since its last sweep.
	back := make([]time.Time, c.nodes.Len())
	for {
		select {
		case <-c.closed:
			return
		case <-t.C:
		}
		missed := c.leftovers.missedNodes(len(back))
		if missed == nil {
			return
		}
		for node, m := range missed {
			if c.closing() {
				return
			}
			back[node] = c.sweepStep(node, m, back[node])
		}
	}
}

// sweepStep is a round of the sweep on node: whether it missed a release
// still remembered, and back, when it answered the release that asked it
// (zero when it has not since its last sweep). It returns back as the
// round leaves it.
func (c *Client) sweepStep(node int, missed bool, back time.Time) time.Time {
	switch {
	case !missed:
		return time.Time{}
	case back.IsZero():
		if lo := c.leftovers.on(node, 1); len(lo) == 1 && c.releaseOn(node, lo[0].key, lo[0].token) {
			return time.Now()
		}
		return time.Time{}
	case time.Since(back) >= sweepWait:
		c.sweepNode(node)
		return time.Time{}
	}
	return back
}

// closing reports whether Close was called.
func (c *Client) closing() bool { return isClosed(c.closed) }

// sweepNode sends node the releases of every leftover it missed,
// sweepBatch at a time, and forgets each token there once its release is
// answered. It stops at a batch not all answered (the node stopped
// answering again), or when the Client closes.
func (c *Client) sweepNode(node int) {
	for batch := range slices.Chunk(c.leftovers.on(node, maxLeftovers), sweepBatch) {
		if c.closing() {
			return
		}
		answered := make([]bool, len(batch))
		var wg sync.WaitGroup
		for i, lo := range batch {
			wg.Go(func() { answered[i] = c.releaseOn(node, lo.key, lo.token) })
		}
		wg.Wait()
		for i, lo := range batch {
			if answered[i] {
				c.leftovers.answered(lo.key, lo.token, node)
			}
		}
		if slices.Contains(answered, false) {
			return
		}
	}
}

// releaseOn sends the release of key for token to node alone, and reports
// whether the node answered it.
func (c *Client) releaseOn(node int, key, token string) bool {
	req := releaser(key, token)
	req.Local = func(n int) (any, bool) { return int64(0), n != node }
	results, _ := c.fanout(context.Background(), c.requestTimeout(), req, nodes.IsOne, func(int, int) bool { return false })
	return answeredRelease(results[node])
}

// anyMarked reports whether a node is marked in nodes.
func anyMarked(nodes []bool) bool {
	for _, m := range nodes {
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
