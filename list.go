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
// master of a Redis Cluster) to its end, could not read some lock it found
// on every node that answered, or found more than MaxListed locks: the
// locks it returns are those it found. The error names the nodes and their
// errors.
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
// scanned, or could not be read for a lock found (refused: a node out of
// memory, say, or timed out), or there are more than MaxListed; a nil
// ctx.
func (c *Client) List(ctx context.Context, prefix string) ([]HeldLock, error) {
	if err := c.checkCall(ctx); err != nil {
		return nil, err
	}
	keys, errs := c.scanLocks(ctx, c.opts.KeyPrefix+prefix)
	held := make([]HeldLock, len(keys))
	found := make([]bool, len(keys))
	failed := make([][]NodeState, len(keys))
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
			held[k], found[k], failed[k] = c.heldLock(ctx, keys[k])
		}
	})
	var out []HeldLock
	for k := range held {
		if found[k] {
			out = append(out, held[k])
		}
	}
	errs = append(errs, unread(keys, failed, c.opts.KeyPrefix, errs)...)
	if len(errs) > 0 {
		return out, fmt.Errorf("%w: %w", ErrListIncomplete, errors.Join(errs...))
	}
	return out, nil
}

// heldLock reads the lock key key on every node and merges what they
// hold; false when no node that answered holds it. It also returns the
// states of the nodes that did not answer.
func (c *Client) heldLock(ctx context.Context, key string) (HeldLock, bool, []NodeState) {
	name := strings.TrimPrefix(key, c.opts.KeyPrefix)
	states, err := c.Inspect(ctx, name)
	if err != nil {
		return HeldLock{}, false, []NodeState{{Node: "all nodes", Err: err}}
	}
	var failed []NodeState
	for _, st := range states {
		if st.Err != nil {
			failed = append(failed, st)
		}
	}
	h, found := mergeHeld(name, states, c.quorum)
	return h, found, failed
}

// unread returns an error for each node that could not be read for some
// lock found, the keys' (in order) failed states say, naming the first
// such lock and how many there were; none for a node that scanned, an
// error of the scan, already names.
func unread(keys []string, failed [][]NodeState, prefix string, scanned []error) []error {
	first, count := map[string]error{}, map[string]int{}
	var order []string
	for k, states := range failed {
		for _, st := range states {
			if slices.ContainsFunc(scanned, func(err error) bool { return strings.HasPrefix(err.Error(), st.Node+": ") }) {
				continue
			}
			if count[st.Node]++; count[st.Node] == 1 {
				order = append(order, st.Node)
				first[st.Node] = fmt.Errorf("reading %s: %w", quoteKey(strings.TrimPrefix(keys[k], prefix)), st.Err)
			}
		}
	}
	errs := make([]error, 0, len(order))
	for _, node := range order {
		more := ""
		if n := count[node] - 1; n > 0 {
			more = fmt.Sprintf(" (and %d more locks)", n)
		}
		errs = append(errs, fmt.Errorf("%s: %w%s", node, first[node], more))
	}
	return errs
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
