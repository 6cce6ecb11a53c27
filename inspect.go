package redlock

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// NodeState is what one node holds for one lock, as Client.Inspect read it in
// a single atomic step on that node.
type NodeState struct {
	// Node is the node's Conn.Name.
	Node string
	// Holder is the token in the lock key, "" when the key is absent. A
	// token this library did not write (redsync, node-redlock) shows as is.
	Holder string
	// TTL is the lock key's remaining time to live: 0 when the key is
	// absent, negative when it has no expiry (it was not set by a lock
	// client).
	TTL time.Duration
	// Fence is the node's fencing counter for the key (see fenceKey), 0 when
	// it has none.
	Fence uint64
	// NoMarker reports that the node has no markerKey: it lost its data or
	// never served a lock, and the next acquisition starts its quarantine.
	NoMarker bool
	// Recovering reports that this client's acquisitions are refused there
	// by the restart quarantine: NoMarker, or a marker less than
	// Options.RecoveryDelay old. Always false with DisableQuarantine.
	Recovering bool
	// RecoveringLeft is how long the node stays recovering, by its clock;
	// the whole RecoveryDelay when it has no marker yet.
	RecoveringLeft time.Duration
	// Err is why the node could not be read; the other fields are then zero.
	Err error
}

// Inspect reads, from every node at once, who holds the lock named key, its
// remaining TTL, the node's fencing counter for it, and whether the node is
// recovering. It changes nothing. It blocks until every node answered or
// Options.NodeTimeout passed, and returns one NodeState per node in client
// order. The error is non-nil only for an invalid key (ErrInvalidKey); a
// node's failure is in its NodeState.Err.
func (c *Client) Inspect(ctx context.Context, key string) ([]NodeState, error) {
	wire, err := c.lockKey(key)
	if err != nil {
		return nil, err
	}
	keys := []string{wire, fenceKey(wire), markerKey}
	// read fills decoded[i]; a node that answers too late may still write its
	// entry after the fan-out returned, so only answered entries are read.
	decoded := make([]NodeState, len(c.conns))
	read := &request{script: inspectScript, keys: keys, decode: decodeFunc(func(node int, v any) (any, error) {
		s, err := c.decodeInspect(v)
		if err != nil {
			return nil, err
		}
		decoded[node] = s
		return nil, nil
	})}
	results, _ := c.fanout(ctx, c.opts.NodeTimeout, read, func(any) bool { return true }, func(int, int) bool { return false })
	states := make([]NodeState, len(c.conns))
	for i, r := range results {
		switch {
		case r.Outcome == OutcomeOK:
			states[i] = decoded[i]
		case r.Err != nil:
			states[i].Err = r.Err
		case ctx.Err() != nil:
			states[i].Err = fmt.Errorf("no answer: %w", ctx.Err())
		default:
			states[i].Err = fmt.Errorf("no answer within %s", c.opts.NodeTimeout)
		}
		states[i].Node = r.Node
	}
	return states, nil
}

// decodeInspect decodes the inspect script's reply.
func (c *Client) decodeInspect(v any) (NodeState, error) {
	bad := func(why string) (NodeState, error) {
		return NodeState{}, fmt.Errorf("redlock: unexpected reply to the inspect script (%s): %v", why, v)
	}
	a, ok := v.([]any)
	if !ok || len(a) != 6 {
		return bad("not 6 elements")
	}
	var f [6]string
	for i, x := range a {
		if i == 1 {
			continue
		}
		if f[i], ok = x.(string); !ok {
			return bad("element " + strconv.Itoa(i+1))
		}
	}
	pttl, ok := a[1].(int64)
	if !ok {
		return bad("PTTL")
	}
	var s NodeState
	s.Holder = f[0]
	switch {
	case pttl >= 0:
		s.TTL = time.Duration(pttl) * time.Millisecond
	case pttl == -1:
		s.TTL = -1
	}
	if f[2] != "" {
		n, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return bad("fencing counter")
		}
		s.Fence = n
	}
	sec, err1 := strconv.ParseInt(f[4], 10, 64)
	usec, err2 := strconv.ParseInt(f[5], 10, 64)
	if err1 != nil || err2 != nil {
		return bad("TIME")
	}
	now := sec*1_000_000 + usec
	marker := f[3]
	s.NoMarker = marker == ""
	if c.opts.DisableQuarantine {
		return s, nil
	}
	if s.NoMarker {
		s.Recovering, s.RecoveringLeft = true, c.opts.RecoveryDelay
		return s, nil
	}
	since, err := strconv.ParseInt(marker, 10, 64)
	if err != nil {
		return NodeState{}, fmt.Errorf("redlock: %s is %q, not a time in microseconds", markerKey, marker)
	}
	if left := since + c.opts.RecoveryDelay.Microseconds() - now; left > 0 {
		s.Recovering, s.RecoveringLeft = true, time.Duration(left)*time.Microsecond
	}
	return s, nil
}
