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
	// Fence is the node's fencing counter for the key ("redlock:fence:" +
	// key), 0 when it has none.
	Fence uint64
	// NoMarker reports that the node has no restart marker
	// ("redlock:marker"): it lost its data or never served a lock, and the
	// next acquisition starts its quarantine.
	NoMarker bool
	// Restarted reports that the node's Redis process is another one than
	// the one that wrote its marker: it restarted (and reloaded a snapshot
	// or an AOF that need not hold every lock it granted), or a replica
	// took over. The next acquisition starts its quarantine.
	Restarted bool
	// Recovering reports that this client's acquisitions are refused there
	// by the restart quarantine: NoMarker, Restarted, or a marker less than
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
// recovering. It changes nothing. It blocks until every node answered, ctx
// ended, or the larger of Options.NodeTimeout and 3 s passed (an operator's
// call, not a lock operation), and returns one NodeState per node in client
// order. The error is non-nil only for an invalid key (ErrInvalidKey) or a
// nil ctx; a node's failure is in its NodeState.Err.
func (c *Client) Inspect(ctx context.Context, key string) ([]NodeState, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	wire, err := c.lockKey(key)
	if err != nil {
		return nil, err
	}
	keys := []string{wire, fenceKey(wire), markerKey, processKey}
	args := []string{c.wire.recovery}
	// read fills decoded[i]; a node that answers too late may still write its
	// entry after the fan-out returned, so only answered entries are read.
	decoded := make([]NodeState, len(c.conns))
	read := &request{script: inspectScript, keys: keys, args: args, decode: decodeFunc(func(node int, v any) (any, error) {
		s, err := c.decodeInspect(v)
		if err != nil {
			return nil, err
		}
		decoded[node] = s
		return nil, nil
	})}
	results, _ := c.fanout(ctx, c.operatorTimeout(), read, func(any) bool { return true }, func(int, int) bool { return false })
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
			states[i].Err = fmt.Errorf("no answer within %s", c.operatorTimeout())
		}
		states[i].Node = r.Node
	}
	return states, nil
}

// decodeInspect decodes the inspect script's reply: {holder, PTTL, counter,
// marker, microseconds left recovering or -1}.
func (c *Client) decodeInspect(v any) (NodeState, error) {
	bad := func(why string) (NodeState, error) {
		return NodeState{}, fmt.Errorf("redlock: unexpected reply to the inspect script (%s): %v", why, v)
	}
	a, ok := v.([]any)
	if !ok || len(a) != 6 {
		return bad("not 6 elements")
	}
	var f [3]string
	for i, j := range [...]int{0, 2, 3} {
		if f[i], ok = a[j].(string); !ok {
			return bad("element " + strconv.Itoa(j+1))
		}
	}
	holder, counter, marker := f[0], f[1], f[2]
	pttl, ok1 := a[1].(int64)
	left, ok2 := a[4].(int64)
	restarted, ok3 := a[5].(int64)
	if !ok1 || !ok2 || !ok3 {
		return bad("PTTL, time left or restart")
	}
	if left < 0 {
		return NodeState{}, fmt.Errorf("redlock: %s is %q, not a time in microseconds", markerKey, marker)
	}
	s := NodeState{Holder: holder, NoMarker: marker == "", Restarted: restarted == 1}
	switch {
	case pttl >= 0:
		s.TTL = time.Duration(pttl) * time.Millisecond
	case pttl == -1:
		s.TTL = -1
	}
	if counter != "" {
		n, err := strconv.ParseUint(counter, 10, 64)
		if err != nil {
			return bad("fencing counter")
		}
		s.Fence = n
	}
	if left > 0 {
		s.Recovering, s.RecoveringLeft = true, time.Duration(left)*time.Microsecond
		if s.NoMarker || s.Restarted {
			// The delay went to the node in whole microseconds.
			s.RecoveringLeft = c.opts.RecoveryDelay
		}
	}
	return s, nil
}
