package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrNotChecked means fewer than a quorum of nodes answered Client.Check
// in time: whether the holder is current is unknown, and a resource must
// treat it as not current.
var ErrNotChecked = errors.New("redlock: not checked")

// CheckResult is Client.Check's answer: whether a holder is current, and
// who holds the lock now.
type CheckResult struct {
	// Current reports that a quorum of nodes hold the lock with the token
	// checked (as its writer or as one of its readers), or, checked by
	// fencing token, with the writer whose fencing token it is.
	Current bool
	// Holder is the writer's grant that a quorum of nodes hold now, zero
	// when none does (the lock is free, held shared, or contested); Fence
	// is its fencing token, the counter that a quorum of the nodes holding
	// it reach (the quorum-th largest of theirs), as an election's
	// Leader.Term is.
	Holder Grant
	Fence  uint64
	// Shared reports that a quorum of the nodes hold the lock shared, by
	// readers: a fencing token (CheckFence) is then no writer's, and a
	// reader is checked by its token.
	Shared bool
	// Nodes is how many nodes hold the checked grant; Answered how many
	// answered, of All.
	Nodes, Answered, All int
	// Started is when the check began, and Took how long it took. The
	// answer describes the nodes at instants within that span: at most
	// Took plus the clocks' drift old when it returns, and older by the
	// time the resource takes to act on it (see Client.Check).
	Started time.Time
	Took    time.Duration
}

// Check asks every node whether the grant of token still holds the lock
// named key, the sequencer check of Chubby (CheckSequencer): a resource
// server that can reach the nodes calls it with the token its client sent
// before acting for that client. The answer is Current only when a quorum
// of the nodes hold the lock with token, as its writer or as one of its
// readers. It changes nothing, and blocks until every node answered, ctx
// ended, or the per-node timeout passed: Options.NodeTimeout, raised while
// the nodes' replies come late as for a lock of Options.TTL (see
// Options.MaxNodeTimeout), so that a check does not fail where a lock's
// requests succeed.
//
// Check narrows the window in which a holder that lost its lock (it
// paused, its lock expired or was forced free, and another took it) can
// still act; it does not close it. Its answer describes the nodes at some
// instant during the check: the lock may end, and another client take it,
// right after. A resource that acts on a Current answer at time t may do
// so under a newer holder only if that holder was granted the lock after
// the check began: the window is t minus Started, the check's own duration
// (Took, one round trip to the slowest node) plus however long the
// resource takes to act, plus the drift between the clocks, where the
// holder's own validity deadline leaves it the whole TTL. The resource
// must therefore act at once, within a small fraction of the TTL. Where the
// resource can keep the highest fencing token it has seen (Lock.Fence,
// package fence), fencing closes the window; Check serves the resources
// that cannot, or adds to fencing a refusal of stale holders before any
// work starts. See SAFETY.md, "Checking a holder".
//
// Errors: ErrNotChecked, with the result, when fewer than a quorum
// answered, in a *QuorumError that gives every node's outcome;
// ErrInvalidKey; ErrInvalidToken for an empty token; a nil ctx.
func (c *Client) Check(ctx context.Context, key, token string) (CheckResult, error) {
	if token == "" {
		return CheckResult{}, fmt.Errorf("%w: Check's token is empty", ErrInvalidToken)
	}
	return c.check(ctx, key, func(st NodeState, _ string, _ uint64) bool {
		return st.Holder == token || slices.Contains(st.Readers, token)
	})
}

// CheckFence is Check by fencing token (Lock.Fence) instead of token: the
// answer is Current only when a quorum of the nodes hold the lock with one
// writer's token, and fence is that writer's: the counter that a quorum of
// the nodes holding it reach (CheckResult.Fence). A reader's fencing token
// is not checked this way (readers share the counter): check a reader by
// its token.
func (c *Client) CheckFence(ctx context.Context, key string, fence uint64) (CheckResult, error) {
	if fence == 0 {
		return CheckResult{}, fmt.Errorf("%w: CheckFence's fencing token is 0, which no lock has", ErrInvalidToken)
	}
	return c.check(ctx, key, func(st NodeState, holder string, holderFence uint64) bool {
		return holder != "" && st.Holder == holder && holderFence == fence
	})
}

// check is Check with holds, which says whether a node's state holds the
// checked grant, given the writer's token held on a quorum ("" if none)
// and its fencing token.
func (c *Client) check(ctx context.Context, key string, holds func(st NodeState, holder string, holderFence uint64) bool) (CheckResult, error) {
	if err := c.checkCall(ctx); err != nil {
		return CheckResult{}, err
	}
	onWire, err := c.lockKey(key)
	if err != nil {
		return CheckResult{}, err
	}
	r := CheckResult{Started: time.Now()}
	timeout := c.requestTimeout()
	states, results := c.inspect(ctx, onWire, timeout)
	r.Took, r.All = time.Since(r.Started), len(states)
	for i := range states {
		// A holder's or a reader's TTL ran out there: only its
		// lock-delay keeps the key, and its grant is over.
		if states[i].DelayOnly {
			states[i].Holder = ""
		}
		states[i].Readers = slices.DeleteFunc(states[i].Readers, func(token string) bool {
			return slices.Contains(states[i].DelayOnlyReaders, token)
		})
	}
	r.tally(states, c.quorum, holds)
	if !r.Current && r.Answered < c.quorum {
		return r, c.closedDuring(&QuorumError{Op: "check", Key: onWire, OK: r.Answered, Quorum: c.quorum,
			Nodes: results, Err: ErrNotChecked, Cause: ctxEnded(ctx)})
	}
	return r, nil
}

// tally fills r from the nodes' states: how many answered and how many
// hold the checked grant (holds), the writer's grant that a quorum hold
// and its fencing token, and whether a quorum hold the lock shared.
func (r *CheckResult) tally(states []NodeState, quorum int, holds func(st NodeState, holder string, holderFence uint64) bool) {
	holders := map[string]int{}
	shared := 0
	for _, st := range states {
		if st.Err == nil {
			r.Answered++
			holders[st.Holder]++
			if len(st.Readers) > 0 {
				shared++
			}
		}
	}
	holder := mostHeld(holders)
	if holders[holder] < quorum {
		holder = ""
	}
	var fence uint64
	if holder != "" {
		r.Holder = TokenGrant(holder)
		fence = holderFence(states, holder, quorum)
		r.Fence = fence
	}
	for _, st := range states {
		if st.Err == nil && holds(st, holder, fence) {
			r.Nodes++
		}
	}
	r.Shared = shared >= quorum
	r.Current = r.Nodes >= quorum
}

// holderFence returns the fencing token of the writer holding token on a
// quorum of the nodes: the counter that a quorum of the nodes holding it
// reach, the quorum-th largest of theirs. The nodes that granted the lock
// hold its token (an acquisition raises them to one counter); the others
// that hold it may differ either way: grants the acquisition did not wait
// for, and nodes a renewal reclaimed whose counter was above it (see
// Lock.reclaim), a minority.
func holderFence(states []NodeState, token string, quorum int) uint64 {
	var fences []uint64
	for _, st := range states {
		if st.Err == nil && st.Holder == token {
			fences = append(fences, st.Fence)
		}
	}
	slices.Sort(fences)
	return fences[len(fences)-quorum]
}
