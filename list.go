package redlock

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redlock-go/redlock/internal/wire"
)

// HeldLock is one lock that Client.List found held: a mutex, a permit of
// a semaphore (WithLimit) or a lock held shared (WithShared), merged over
// every node.
type HeldLock struct {
	// Key is the lock's name, as given to Acquire (Options.KeyPrefix
	// left out); for a permit, "name:permit:i".
	Key string
	// Semaphore and Permit name the semaphore and the permit's number
	// when Key is a permit's; "" and 0 otherwise.
	Semaphore string
	Permit    int
	// Shared reports that readers hold the lock (WithShared).
	Shared bool
	// Grants are who holds the lock: its writer, or each of its readers,
	// on the most nodes; each with its owner and since when.
	Grants []Grant
	// Nodes is on how many nodes the writer holds it, or the reader held on
	// the most nodes; Answered is how many nodes answered, of All.
	Nodes, Answered, All int
	// Quorum reports that Nodes is a majority of All: the lock stands.
	// Otherwise it is an acquisition under way, or leftovers of one that
	// failed, which expire with their TTL.
	Quorum bool
	// TTL is the longest time to live the lock has left on a node that
	// holds it.
	TTL time.Duration
	// Waiting is the most clients a node queues as waiting for the lock
	// (see NodeState.Waiting).
	Waiting int
}

// ErrListIncomplete means Client.List could not scan every node (or every
// master of a Redis Cluster) to its end, or found more than MaxListed
// locks: the locks it returns are those it found. The error names the
// nodes and their errors.
var ErrListIncomplete = errors.New("redlock: list incomplete")

// listInspectors bounds how many locks List inspects at once.
const listInspectors = 8

// List returns the locks of this library held on the nodes whose name
// begins with prefix ("" for all), sorted by Key, each merged over every
// node. It never blocks a node for long: it walks each node's keys with
// SCAN, 200 at a time, reading a few bytes of each matching key (never
// KEYS), over a Redis Cluster on every master; then it reads each lock
// found as Inspect does, on every node at once. A node's answer may take
// up to the larger of Options.NodeTimeout and 3 s. Locks of other
// libraries (redsync, node-redlock) on the same nodes are not listed:
// their values are not this library's tokens (Inspect shows them). Errors:
// ErrListIncomplete, with the locks found, when some node could not be
// scanned or there are more than MaxListed; a nil ctx.
func (c *Client) List(ctx context.Context, prefix string) ([]HeldLock, error) {
	if err := c.checkCall(ctx); err != nil {
		return nil, err
	}
	keys, errs := c.scanLocks(ctx, c.opts.KeyPrefix+prefix)
	held := make([]HeldLock, len(keys))
	found := make([]bool, len(keys))
	var next sync.Mutex
	i := 0
	forEach(min(listInspectors, len(keys)), func(int) {
		for {
			next.Lock()
			k := i
			i++
			next.Unlock()
			if k >= len(keys) {
				return
			}
			held[k], found[k] = c.heldLock(ctx, keys[k])
		}
	})
	var out []HeldLock
	for k := range held {
		if found[k] {
			out = append(out, held[k])
		}
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%w: %w", ErrListIncomplete, errors.Join(errs...))
	}
	return out, nil
}

// heldLock reads the lock key key on every node and merges what they
// hold; false when no node holds it.
func (c *Client) heldLock(ctx context.Context, key string) (HeldLock, bool) {
	name := strings.TrimPrefix(key, c.opts.KeyPrefix)
	states, err := c.Inspect(ctx, name)
	if err != nil {
		return HeldLock{}, false
	}
	return mergeHeld(name, states, c.quorum)
}

// mergeHeld merges what states, every node's, say of the lock name; false
// when no node holds it.
func mergeHeld(name string, states []NodeState, quorum int) (HeldLock, bool) {
	h := HeldLock{Key: name, All: len(states)}
	h.Semaphore, h.Permit = permitOf(name)
	holders, readers := map[string]int{}, map[string]int{}
	for _, st := range states {
		if st.Err != nil {
			continue
		}
		h.Answered++
		h.Waiting = max(h.Waiting, st.Waiting)
		if st.Holder != "" {
			holders[st.Holder]++
		}
		for _, r := range st.Readers {
			readers[r]++
		}
	}
	switch {
	case len(holders) > 0:
		token := mostHeld(holders)
		h.Grants, h.Nodes = []Grant{TokenGrant(token)}, holders[token]
		h.TTL = longestTTL(states, func(st NodeState) bool { return st.Holder == token })
	case len(readers) > 0:
		h.Shared, h.Nodes = true, readers[mostHeld(readers)]
		for _, r := range slices.Sorted(maps.Keys(readers)) {
			h.Grants = append(h.Grants, TokenGrant(r))
		}
		h.TTL = longestTTL(states, func(st NodeState) bool { return len(st.Readers) > 0 })
	default:
		return h, false
	}
	h.Quorum = h.Nodes >= quorum
	return h, true
}

// mostHeld returns the token counted on the most nodes, the least token
// of those tied.
func mostHeld(counts map[string]int) string {
	best, most := "", 0
	for token, n := range counts {
		if n > most || (n == most && token < best) {
			best, most = token, n
		}
	}
	return best
}

// longestTTL returns the longest TTL among the states that answered and
// hold (by holds).
func longestTTL(states []NodeState, holds func(NodeState) bool) time.Duration {
	var ttl time.Duration
	for _, st := range states {
		if st.Err == nil && holds(st) {
			ttl = max(ttl, st.TTL)
		}
	}
	return ttl
}

// permitOf returns the semaphore's name and the permit's number when name
// is a permit's ("name:permit:i"), else "" and 0.
func permitOf(name string) (string, int) {
	i := strings.LastIndex(name, wire.PermitInfix)
	if i <= 0 {
		return "", 0
	}
	n, err := strconv.Atoi(name[i+len(wire.PermitInfix):])
	if err != nil || n < 1 || n > MaxLimit {
		return "", 0
	}
	return name[:i], n
}
