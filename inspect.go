package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redlock-go/redlock/internal/nodes"
	"github.com/redlock-go/redlock/internal/telemetry"
	"github.com/redlock-go/redlock/internal/wire"
)

// NodeState is what one node holds for one lock, as Client.Inspect read it in
// a single atomic step on that node.
type NodeState struct {
	// Node is the node's Conn.Name.
	Node string
	// Holder is the token in the lock key, "" when the key is absent. A
	// token this library did not write (redsync, node-redlock) shows as is.
	Holder string
	// Owner and Since are what Holder's token says of its grant (see
	// TokenGrant): who holds the lock (Options.Owner, WithOwner) and since
	// when, by the holder's clock; "" and zero when nobody holds it, or
	// the token does not say (another library's).
	Owner string
	Since time.Time
	// Readers are the tokens of the readers that hold the lock shared
	// (WithShared), nil when none does; Holder is then "".
	Readers []string
	// ReaderGrants are what each of Readers says of its grant, in the same
	// order: each reader's owner and since when it holds the lock.
	ReaderGrants []Grant
	// DelayOnlyReaders are the readers among Readers whose own TTL ran out
	// on the node, kept only by the lock-delay their tokens carry
	// (WithLockDelay): they keep writers out, but their grants there have
	// ended. Check counts them as not holding the lock.
	DelayOnlyReaders []string
	// TTL is the lock key's remaining time to live: 0 when the key is
	// absent, negative when it has no expiry (it was not set by a lock
	// client).
	TTL time.Duration
	// DelayOnly reports that Holder's own TTL ran out on the node, and
	// the key stays only for the lock-delay its token carries
	// (WithLockDelay): it keeps other clients out, but Holder's grant
	// there has ended. Check and an election's Leader count such a node
	// as held by nobody.
	DelayOnly bool
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
	// Waiting is how many clients the node queues as waiting for the
	// lock (see the package documentation, The algorithm): those whose
	// attempt it refused, or who renewed their place, in the last two
	// seconds. A client that waited and
	// holds the lock now (its last attempt won) may be counted until its
	// entry lapses there, though it holds the lock: its release takes the
	// entry out. Each reader waiting in Acquire (WithShared) counts
	// apart, as each waits in a place of its own.
	Waiting int
	// Data is the type of the data the key holds when it holds neither a
	// lock nor a lock's readers ("hash", "list", ...): another program's
	// key, which no release frees; "" otherwise.
	Data string
	// ForcedBy is who last forced the lock free on the node
	// (Client.ForceRelease), at ForcedAt by the forcing client's clock,
	// taking it from the holders whose tokens are ForcedTokens; "", zero
	// and nil when nobody did since the holder's lock would have expired.
	ForcedBy     string
	ForcedAt     time.Time
	ForcedTokens []string
	// Err is why the node could not be read; the other fields are then zero.
	Err error
}

// Inspect reads, from every node at once, who holds the lock named key, its
// remaining TTL, the node's fencing counter for it, and whether the node is
// recovering. It changes nothing. It blocks until every node answered, ctx
// ended, or the larger of Options.NodeTimeout and 3 s passed (an operator's
// call, not a lock operation), and returns one NodeState per node in client
// order. The error is non-nil only for an invalid key (ErrInvalidKey) or a
// nil ctx; a node's failure is in its NodeState.Err. A lock this Client
// just took may not show on every node yet: Acquire returns at a quorum,
// and its requests to the others may still be under way. A semaphore's
// permits are locks of their own keys, name:permit:i: Inspect of the
// semaphore's name shows none of them; List shows them together.
func (c *Client) Inspect(ctx context.Context, key string) ([]NodeState, error) {
	if err := c.checkCall(ctx); err != nil {
		return nil, err
	}
	onWire, err := c.lockKey(key)
	if err != nil {
		return nil, err
	}
	states, _ := c.inspect(ctx, onWire, c.operatorTimeout())
	return states, nil
}

// inspect is Inspect of the lock key onWire, a valid key on the wire, with
// timeout for each node's answer.
func (c *Client) inspect(ctx context.Context, onWire string, timeout time.Duration) ([]NodeState, []NodeResult) {
	return c.inspectUntil(ctx, onWire, timeout, nil)
}

// inspectUntil is inspect that stops waiting for the nodes once settled
// returns true: it is called with each node's state as it comes, in the
// calling goroutine, and says that the nodes still to answer cannot
// change what the caller makes of the states. A nil settled waits for
// every node.
func (c *Client) inspectUntil(ctx context.Context, onWire string, timeout time.Duration, settled func(NodeState) bool) ([]NodeState, []NodeResult) {
	keys := c.inspectKeys(onWire)
	args := []string{c.wire.recovery, strconv.FormatInt(time.Now().UnixMicro(), 10)}
	// read fills decoded[i]; a node that answers too late may still write its
	// entry after the fan-out returned, so only answered entries are read.
	decoded := make([]NodeState, len(c.conns))
	read := &nodes.Request{Script: wire.InspectScript, Keys: keys, Args: args, Decode: nodes.DecodeFunc(func(node int, v any) (any, error) {
		s, err := c.decodeInspect(v)
		if err != nil {
			return nil, err
		}
		decoded[node] = s
		return s, nil
	})}
	done := false
	isOK := func(v any) bool {
		if settled != nil && !done {
			done = settled(v.(NodeState))
		}
		return true
	}
	results, _ := c.fanout(ctx, timeout, read, isOK, func(int, int) bool { return done })
	c.observeNodes(ctx, nil, telemetry.OpInspect, results)
	states := make([]NodeState, len(c.conns))
	for i, r := range results {
		switch {
		case r.Outcome == OutcomeOK:
			states[i] = decoded[i]
		case r.Err != nil:
			states[i].Err = r.Err
		case done:
			states[i].Err = errors.New("not waited for: the others settled it")
		case ctx.Err() != nil:
			states[i].Err = fmt.Errorf("no answer: %w", ctx.Err())
		default:
			states[i].Err = fmt.Errorf("no answer within %s", timeout)
		}
		states[i].Node = r.Node
	}
	return states, results
}

// inspectKeys returns the keys the inspect script reads for the lock key
// onWire (see lua/inspect.lua).
func (c *Client) inspectKeys(onWire string) []string {
	marker, process := c.keys.MarkerKeys(onWire)
	tag := c.keys.Tag(onWire)
	return []string{onWire, c.keys.FenceKey(onWire), marker, process, wire.QueuePrefix + tag + onWire, c.keys.ForcedKey(onWire),
		wire.QueueDeadlinePrefix + tag + onWire}
}

// inspectReply is the inspect script's reply: {holder, PTTL, counter,
// marker, microseconds left recovering or -1, restarted, readers, waiting,
// forced record, the type of data that is no lock, the readers kept only by
// their lock-delay}.
type inspectReply struct {
	holder, counter, marker, forced, other string
	pttl, left, restarted, waiting         int64
	readers, delayed                       []string
}

// parseInspect checks the shape of the inspect script's reply.
func parseInspect(v any) (inspectReply, error) {
	a, ok := v.([]any)
	if !ok || len(a) != 11 {
		return inspectReply{}, fmt.Errorf("redlock: unexpected reply to the inspect script (not 11 elements): %v", v)
	}
	var r inspectReply
	var oks [11]bool
	r.holder, oks[0] = a[0].(string)
	r.pttl, oks[1] = a[1].(int64)
	r.counter, oks[2] = a[2].(string)
	r.marker, oks[3] = a[3].(string)
	r.left, oks[4] = a[4].(int64)
	r.restarted, oks[5] = a[5].(int64)
	r.readers, oks[6] = stringsOf(a[6])
	r.waiting, oks[7] = a[7].(int64)
	r.forced, oks[8] = a[8].(string)
	r.other, oks[9] = a[9].(string)
	r.delayed, oks[10] = stringsOf(a[10])
	for i, ok := range oks {
		if !ok {
			return inspectReply{}, fmt.Errorf("redlock: unexpected reply to the inspect script (element %d): %v", i+1, v)
		}
	}
	return r, nil
}

// stringsOf returns v as a list of strings, when it is one.
func stringsOf(v any) ([]string, bool) {
	a, ok := v.([]any)
	if !ok {
		return nil, false
	}
	var out []string
	for _, x := range a {
		s, ok := x.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// keyTTL returns a lock key's TTL from its PTTL reply (see
// NodeState.TTL), and whether only the lock-delay of holder, its token,
// keeps it (NodeState.DelayOnly), as the scripts judge it (lua/delay.lua).
func keyTTL(pttl int64, holder string) (ttl time.Duration, delayOnly bool) {
	switch {
	case pttl >= 0:
		ttl = time.Duration(pttl) * time.Millisecond
	case pttl == -1:
		ttl = -1
	}
	d := TokenGrant(holder).LockDelay
	return ttl, d > 0 && ttl >= 0 && ttl <= d
}

// decodeInspect decodes the inspect script's reply into a NodeState.
func (c *Client) decodeInspect(v any) (NodeState, error) {
	r, err := parseInspect(v)
	if err != nil {
		return NodeState{}, err
	}
	if r.left < 0 {
		return NodeState{}, fmt.Errorf("redlock: %s is %q, not a time in microseconds", wire.MarkerKey, r.marker)
	}
	// The whole delay: a countdown that has not started (no marker, or a
	// restart since it was written), which the script returns in whole
	// microseconds. A node sitting out a quarantine that a restart started
	// has a marker of its own process, and fewer left.
	whole := r.left > 0 && r.left == c.opts.RecoveryDelay.Microseconds()
	s := NodeState{Holder: r.holder, Readers: r.readers, DelayOnlyReaders: r.delayed, NoMarker: r.marker == "", Restarted: r.restarted == 1 && whole, Waiting: int(r.waiting),
		Data: r.other}
	if r.holder != "" {
		g := TokenGrant(r.holder)
		s.Owner, s.Since = g.Owner, g.Since
	}
	for _, token := range r.readers {
		s.ReaderGrants = append(s.ReaderGrants, TokenGrant(token))
	}
	s.ForcedBy, s.ForcedAt, s.ForcedTokens = parseForced(r.forced)
	s.TTL, s.DelayOnly = keyTTL(r.pttl, r.holder)
	if r.counter != "" {
		n, err := strconv.ParseUint(r.counter, 10, 64)
		if err != nil {
			return NodeState{}, fmt.Errorf("redlock: unexpected reply to the inspect script (fencing counter): %v", v)
		}
		s.Fence = n
	}
	if r.left > 0 {
		s.Recovering, s.RecoveringLeft = true, time.Duration(r.left)*time.Microsecond
		if whole {
			s.RecoveringLeft = c.opts.RecoveryDelay
		}
	}
	return s, nil
}
