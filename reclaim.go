package redlock

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/redlock-go/redlock/internal/nodes"
	"github.com/redlock-go/redlock/internal/wire"
)

// reclaim takes a renewed writer's lock on the nodes in refused, which
// answered its extension without holding it, where the key is free: a
// lock won while another client's attempt held one of the nodes (two
// candidates of an election that tried at once, say) otherwise rests on
// the nodes that granted it for as long as it is renewed, and one more of
// them down loses it while a majority of the nodes is up. The lock holds
// a quorum (the extension before it succeeded), so no other client can
// win the key meanwhile; each node decides as it does for any acquisition
// with the lock's token: it refuses while it recovers from a restart,
// and while another token holds the key or a lock-delay stands. The lock's validity is
// the extension's: a node reclaimed adds none. The node's fencing counter
// is raised to the lock's fencing token, not bumped past it (see
// lua/reclaim.lua); one that other clients' attempts took past it stays,
// and Check, CheckFence and an election's Leader read the lock's token as
// the counter a quorum of the nodes holding it reach (see holderFence).
//
// It holds the lock's release back until every node answered or the node
// timeout passed, so that a release cannot reach a node before the
// request that would set the key there again.
func (l *Lock) reclaim(ttl time.Duration, refused []int) {
	l.releasing.Lock()
	defer l.releasing.Unlock()
	l.mu.Lock()
	ended := l.err != nil || l.releaseSent
	l.mu.Unlock()
	if ended {
		return
	}
	c := l.client
	marker, process := c.keys.MarkerKeys(l.key)
	clock := strconv.FormatInt(time.Now().UnixMicro(), 10)
	millis := ttl + l.delay
	req := &nodes.Request{Script: wire.ReclaimScript,
		Keys: []string{l.key, c.keys.FenceKey(l.key), marker, process},
		Args: []string{l.token, c.wire.millis(millis), c.wire.recovery, c.wire.counterMillis(millis), clock, strconv.FormatUint(l.fence, 10)},
		Local: func(node int) (any, bool) {
			// Nodes that extended the lock hold it: nothing to ask.
			return int64(1), !slices.Contains(refused, node)
		}}
	never := func(ok, others int) bool { return false }
	_, _, unfinished := c.trackedFanout(context.Background(), c.nodeTimeout(ttl), req, l.lagging, nodes.IsOne, never)
	// A node slower than the node timeout: this client's next attempt on
	// the key waits for it there (a release may still overtake it, and
	// the key then stays on that node until its TTL passes).
	c.waiters.AddTrailing(l.key, unfinished.Lagging())
}

// everyAnswer returns enough for an extension that hears every node out
// once a quorum extended it, and ends as enough says until then.
func (c *Client) everyAnswer(enough func(ok, others int) bool) func(ok, others int) bool {
	n, quorum := len(c.conns), c.quorum
	return func(ok, others int) bool {
		if ok >= quorum {
			return ok+others >= n
		}
		return enough(ok, others)
	}
}

// nodesWith returns the indexes of the results with outcome o.
func nodesWith(results []NodeResult, o Outcome) []int {
	var found []int
	for i, r := range results {
		if r.Outcome == o {
			found = append(found, i)
		}
	}
	return found
}
