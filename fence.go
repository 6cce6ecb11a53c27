package redlock

import (
	"context"
	"strconv"
	"time"

	"github.com/redlock-go/redlock/internal/nodes"
	"github.com/redlock-go/redlock/internal/wire"
)

// Fence returns the lock's fencing token: a number strictly greater than the
// token of every lock of the same key that any client of this library was
// handed before this acquisition started. A protected resource that keeps
// the highest token it has seen and refuses requests carrying a lower one is
// safe from a holder that paused, or whose request was delayed, past the end
// of its validity; the holder itself sends its token as often as it needs
// (see package fence, and the package documentation for the argument and its
// assumptions). Tokens of different
// keys are unrelated; they are not timestamps. A permit of a semaphore
// (WithLimit) counts on its own key (Lock.Key). The readers (WithShared) and
// writers of one key share its counter: a resource refuses a reader whose
// token is below a write's, and a writer whose token is below any write's
// or reader's it served (fence.Store.ReadShared).
func (l *Lock) Fence() uint64 { return l.fence }

// fenceOf returns the fencing token of a granted acquisition, the largest
// counter among the nodes that granted it, and how many of them are behind.
func fenceOf(results []NodeResult, replies []acquireReply) (fence uint64, behind int) {
	for i, r := range results {
		if r.Outcome == OutcomeOK {
			fence = max(fence, replies[i].fence)
		}
	}
	for i, r := range results {
		if r.Outcome == OutcomeOK && replies[i].fence < fence {
			behind++
		}
	}
	return fence, behind
}

// raiseFences is the second step of an acquisition whose granting nodes
// disagree on the fencing counter. It raises the counter to fence on every
// node that is not known to be there already: the granting nodes behind, and
// the nodes that refused or did not answer, so that the nodes agree again
// sooner. A node counts as OK when it still holds the lock, which orders the
// raise before any later grant of the key there; the token is safe to hand
// out once a quorum is OK, since every later quorum meets this one (see the
// package documentation).
func (c *Client) raiseFences(ctx context.Context, key, token string, fence uint64, ttl time.Duration,
	granted []NodeResult, replies []acquireReply) ([]NodeResult, int) {
	keys := []string{key, c.keys.FenceKey(key)}
	value := strconv.FormatUint(fence, 10)
	counterTTL := c.wire.counterMillis(ttl)
	raise := &nodes.Request{Script: wire.RaiseScript, Keys: keys, Args: []string{token, value, counterTTL},
		Local: func(node int) (any, bool) {
			// Granted, and already there.
			return int64(1), granted[node].Outcome == OutcomeOK && replies[node].fence == fence
		}}
	results, ok := c.fanout(ctx, c.nodeTimeout(ttl), raise, nodes.IsOne, c.decided)
	for i := range results {
		if granted[i].Outcome != OutcomeOK && results[i].Outcome != OutcomeOK {
			results[i] = granted[i] // what the node said to the acquisition
		}
	}
	return results, ok
}
