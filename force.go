package redlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-go/redlock/internal/nodes"
	"github.com/redlock-go/redlock/internal/wire"
)

// ErrTakenOver means an operator forced the lock free (Client.ForceRelease,
// `redlock release --force`) while it was held: the holder must stop
// acting on the protected resource. Lock.Err, Extend and Do report it,
// beside ErrLockLost (errors.Is is true for both), at the holder's next
// extension, and the log record of the lost lock has the reason
// "forced_by_operator"; the error says who forced it and when.
var ErrTakenOver = errors.New("redlock: taken over by an operator")

// ForceRelease frees the lock named key in one step, without its holder's
// token, for an operator: on every node, it deletes the key whoever holds
// it (a writer, a permit's holder when key is the permit's
// "name:permit:i", or every reader of a lock held shared), records who
// forced it (by: an owner, as WithOwner takes, such as "ops:alice") with
// the tokens taken, and wakes the clients waiting for the key at once. The
// record expires when the lock would have, by the node's clock, and makes
// the holder's next extension fail with ErrTakenOver. Only the named key
// is freed: the other permits of a semaphore are forced each by its own
// key. A key the nodes keep without an expiry, or of another type than a
// lock's, is no lock, and is left alone (an OutcomeError on that node).
//
// It returns the grants taken, each once, with their owners. It blocks
// until every node answered, ctx ended, or the larger of
// Options.NodeTimeout and 3 s passed. Errors: ErrNotHeld (a *QuorumError)
// when no node that answered held the key; ErrNotReleased (a *QuorumError,
// with the grants taken) when fewer than a quorum answered, and the key
// may stand on the others until its TTL passes; ErrInvalidKey;
// ErrInvalidOwner for by.
//
// Forcing a lock free is as unsafe as a lock that expires under its
// holder: the holder learns of it only at its next extension (at most a
// third of its TTL later when it renews), and until then may still act on
// the resource. Fencing tokens (Lock.Fence) keep its late writes out.
func (c *Client) ForceRelease(ctx context.Context, key, by string) ([]Grant, error) {
	if err := c.checkCall(ctx); err != nil {
		return nil, err
	}
	onWire, err := c.lockKey(key)
	if err != nil {
		return nil, err
	}
	if err := checkOwner(by, "ForceRelease by"); err != nil {
		return nil, err
	}
	channel, clock, queue, deadlines, _ := wire.ReleaseStrings(onWire, time.Now(), c.keys.Tag(onWire))
	taken := make([][]string, len(c.conns))
	req := &nodes.Request{Script: wire.ForceReleaseScript, Keys: []string{onWire, queue, deadlines, c.keys.ForcedKey(onWire)},
		Args: []string{by, channel, clock}, Decode: nodes.DecodeFunc(func(node int, v any) (any, error) {
			tokens, ok := stringsOf(v)
			if !ok {
				return nil, fmt.Errorf("redlock: unexpected reply to the force release script: %v", v)
			}
			taken[node] = tokens
			return int64(min(len(tokens), 1)), nil
		})}
	results, ok := c.fanout(ctx, c.operatorTimeout(), req, nodes.IsOne, func(int, int) bool { return false })
	grants := takenGrants(taken, results)
	answered := 0
	for _, r := range results {
		if answeredRelease(r) {
			answered++
		}
	}
	qe := &QuorumError{Op: "force release", Key: onWire, OK: ok, Quorum: c.quorum, Nodes: results}
	switch {
	case answered < c.quorum:
		qe.Err = ErrNotReleased
		return grants, qe
	case ok == 0:
		qe.Err = ErrNotHeld
		return nil, qe
	}
	c.opts.Logger.Warn("redlock: lock forced free", slog.String("key", onWire), slog.String("by", by),
		slog.Int("nodes", ok), slog.Any("owners", grantOwners(grants)))
	return grants, nil
}

// takenGrants returns the grants of the tokens taken on the nodes that
// answered, each once, in the order of the nodes.
func takenGrants(taken [][]string, results []NodeResult) []Grant {
	var grants []Grant
	for i, r := range results {
		if r.Outcome != OutcomeOK {
			continue
		}
		for _, token := range taken[i] {
			if !slices.ContainsFunc(grants, func(g Grant) bool { return g.Token == token }) {
				grants = append(grants, TokenGrant(token))
			}
		}
	}
	return grants
}

// grantOwners returns the owners of grants, for a log record.
func grantOwners(grants []Grant) []string {
	owners := make([]string, len(grants))
	for i, g := range grants {
		owners[i] = g.Owner
	}
	return owners
}

// goneOnMajority reports whether so many nodes answered that they no
// longer hold a lock's token (OutcomeHeld) that a quorum cannot hold it.
func goneOnMajority(results []NodeResult, quorum int) bool {
	gone := 0
	for _, r := range results {
		if r.Outcome == OutcomeHeld {
			gone++
		}
	}
	return gone > len(results)-quorum
}

// forcedFree returns, for a lock of key held with token that a majority
// of nodes no longer hold, an error that wraps ErrTakenOver and
// ErrLockLost and says who forced it free, when a node keeps the record
// of an operator's ForceRelease that took token; nil otherwise. It reads
// the nodes within the per-node timeout of a lock of ttl.
func (c *Client) forcedFree(ctx context.Context, key, token string, ttl time.Duration) error {
	states, _ := c.inspect(nodes.Uncancelled(ctx), key, c.nodeTimeout(ttl))
	for _, st := range states {
		if st.Err == nil && slices.Contains(st.ForcedTokens, token) {
			return fmt.Errorf("%w (%s, at %s): %w", ErrTakenOver, st.ForcedBy, st.ForcedAt.UTC().Format(time.RFC3339Nano), ErrLockLost)
		}
	}
	return nil
}

// parseForced decodes a forced record (see wire.Layout.ForcedKey): who
// forced the lock free, when, and the tokens taken; zero values for "".
func parseForced(record string) (by string, at time.Time, tokens []string) {
	fields := strings.Fields(record)
	if len(fields) < 2 {
		return "", time.Time{}, nil
	}
	if us, err := strconv.ParseInt(fields[1], 10, 64); err == nil {
		at = time.UnixMicro(us)
	}
	return fields[0], at, fields[2:]
}
