package redlock

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// fenceTTL is how long a lock key's fencing counter outlives the last
// acquisition of that key; every acquisition renews it. A counter that
// expired starts again from the node's clock in microseconds, which is
// above every token it handed out as long as the node clocks are not off
// by fenceTTL, so the TTL trades the memory idle keys hold against nothing
// that matters in practice.
const fenceTTL = 30 * 24 * time.Hour

// fencePrefix starts every fencing counter key; lock keys must not.
const fencePrefix = "redlock:fence:"

// fenceKey returns the name of the fencing counter kept on every node beside
// the lock key key (the key on the wire, Options.KeyPrefix included):
// "redlock:fence:" + key. It holds the last fencing token the node handed out
// for key, as a decimal integer, and expires fenceTTL after the last
// acquisition. Lock keys must not begin with "redlock:fence:".
func fenceKey(key string) string { return fencePrefix + key }

// Fence returns the lock's fencing token: a number strictly greater than the
// token of every lock of the same key that any client of this library was
// handed before this acquisition started. A protected resource that keeps
// the highest token it has accepted and refuses requests carrying one that is
// not greater is safe from a holder that paused, or whose request was
// delayed, past the end of its validity (see package fence, and the package
// documentation for the argument and its assumptions). Tokens of different
// keys are unrelated; they are not timestamps.
func (l *Lock) Fence() uint64 { return l.fence }

// lockKey returns the key on the wire for a lock name, refusing the keys the
// library keeps beside the locks.
func (c *Client) lockKey(name string) (string, error) {
	key, err := c.key(name)
	if err != nil {
		return "", err
	}
	if key == markerKey || strings.HasPrefix(key, fencePrefix) {
		return "", fmt.Errorf("%w: %q is reserved for the library's own keys", ErrInvalidKey, key)
	}
	return key, nil
}

// Replies of the acquire script.
const (
	acquireHeld       = 0
	acquireGranted    = 1
	acquireRecovering = 2
)

// acquireReply is one node's answer to the acquire script.
type acquireReply struct {
	status int64
	fence  uint64
	left   time.Duration // recovery time left, when recovering
}

// acquirer fills in r as the request of one acquisition attempt and
// returns it. fenceKey is fenceKey(key); clock is the caller's clock in
// microseconds, the same on every node, so that nodes that lost or missed
// counters start again from one value and agree, with no second step. It
// decodes each node's reply into replies[i], i being the node's index: the
// caller may read replies[i] once the fan-out recorded node i's answer.
func (c *Client) acquirer(r *acquireRequest, key, fenceKey, token, clock string, ttl time.Duration, replies []acquireReply) *request {
	r.keys = [3]string{key, fenceKey, markerKey}
	r.args = [5]string{token, c.wire.millis(ttl), c.wire.recovery, c.wire.counterTTL, clock}
	r.replies = replies
	r.request = request{script: acquireScript, keys: r.keys[:], args: r.args[:], decode: r}
	return &r.request
}

// acquireRequest is an acquisition's request with its keys, arguments and
// decoder in one allocation.
type acquireRequest struct {
	request
	keys    [3]string
	args    [5]string
	replies []acquireReply
}

// decode implements decoder: it records node's reply in replies[node] and
// classifies it by its status.
func (r *acquireRequest) decode(node int, v any) (any, error) {
	reply, err := decodeAcquire(v)
	if err != nil {
		return nil, err
	}
	r.replies[node] = reply
	return reply.status, nil
}

func decodeAcquire(v any) (acquireReply, error) {
	a, ok := v.([]any)
	if ok && len(a) == 3 {
		status, ok1 := a[0].(int64)
		fence, ok2 := decodeUint(a[1])
		left, ok3 := a[2].(int64)
		if ok1 && ok2 && ok3 && status >= acquireHeld && status <= acquireRecovering {
			return acquireReply{status: status, fence: fence, left: time.Duration(left) * time.Microsecond}, nil
		}
	}
	return acquireReply{}, fmt.Errorf("redlock: unexpected reply to the acquire script: %v", v)
}

// decodeUint reads a non-negative integer sent as a string or an integer.
func decodeUint(v any) (uint64, bool) {
	switch x := v.(type) {
	case string:
		n, err := strconv.ParseUint(x, 10, 64)
		return n, err == nil
	case int64:
		return uint64(x), x >= 0
	}
	return 0, false
}

// isGranted reports the acquire script's grant.
func isGranted(v any) bool { s, ok := v.(int64); return ok && s == acquireGranted }

// noteRecovering turns the refusals of recovering nodes into
// OutcomeRecovering, with the time they have left.
func noteRecovering(results []NodeResult, replies []acquireReply) {
	for i := range results {
		if results[i].Outcome == OutcomeHeld && replies[i].status == acquireRecovering {
			results[i].Outcome = OutcomeRecovering
			results[i].RecoveringLeft = replies[i].left
		}
	}
}

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
	keys := []string{key, fenceKey(key)}
	value := strconv.FormatUint(fence, 10)
	counterTTL := c.wire.counterTTL
	raise := &request{script: raiseScript, keys: keys, args: []string{token, value, counterTTL},
		local: func(node int) (any, bool) {
			// Granted, and already there.
			return int64(1), granted[node].Outcome == OutcomeOK && replies[node].fence == fence
		}}
	results, ok := c.fanout(ctx, c.nodeTimeout(ttl), raise, isOne, c.decided)
	for i := range results {
		if granted[i].Outcome != OutcomeOK && results[i].Outcome != OutcomeOK {
			results[i] = granted[i] // what the node said to the acquisition
		}
	}
	return results, ok
}
