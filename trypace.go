package redlock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redlock-go/redlock/internal/nodes"
)

// When clients loop TryAcquire on one key, their attempts meet on the
// nodes, each node grants the one it hears first, and none reaches a
// quorum: a split vote, after which every one of them tries again, and
// they meet again. The random pause that Redlock prescribes after a failed
// attempt spreads them out, but TryAcquire may pause only within its
// per-node timeout, which on a loaded machine an attempt nearly uses up.
//
// So a split vote gives the next turn to one client, without asking
// anyone: the one the first node (in Options order) granted. Every node
// grants one client at most, so at most one client per split is it, and
// it tries again at once. Every other client of the split makes no attempt
// on the key for a random time of one to three times what its attempt
// took, across its calls: a TryAcquire called meanwhile waits the rest of
// that time out, within its per-node timeout, and returns ErrNotAcquired
// without asking the nodes. Clients whose node lists come in different
// orders only lose the shortcut: they all pause.

// tryPacing keeps, per key, the time before which this client's
// TryAcquire makes no attempt after a split vote.
type tryPacing struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// left returns how long this client is still to make no attempt on key.
func (p *tryPacing) left(key string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	until, ok := p.until[key]
	if !ok {
		return 0
	}
	left := time.Until(until)
	if left <= 0 {
		delete(p.until, key)
	}
	return left
}

// hold makes this client's TryAcquire make no attempt on key until until,
// and forgets the keys whose time has passed once there are many.
func (p *tryPacing) hold(key string, until time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.until == nil {
		p.until = make(map[string]time.Time)
	}
	if len(p.until) >= pacedKeysPruned {
		now := time.Now()
		for k, u := range p.until {
			if !u.After(now) {
				delete(p.until, k)
			}
		}
	}
	p.until[key] = until
}

// pacedKeysPruned is how many keys tryPacing keeps before it forgets the
// ones whose time has passed.
const pacedKeysPruned = 64

// splitPause returns the pause of this client after its TryAcquire of key,
// which took took, failed with err, which a node refused because the key
// is held: up to tryPauses times took, at random; after a split vote, none
// for the client that the first node granted, and one to tryPauses+1 times
// took for the others, which the client's next calls keep to.
func (c *Client) splitPause(key string, took time.Duration, err error) time.Duration {
	qe := quorumError(err)
	if qe == nil || qe.OK == 0 {
		return randomBetween(0, tryPauses*took)
	}
	if qe.Nodes[0].Outcome == OutcomeOK {
		return 0
	}
	pause := randomBetween(took, (tryPauses+1)*took)
	c.tryPacing.hold(key, time.Now().Add(pause))
	return pause
}

// pacedOut waits out the left of this client's pause on key after a split
// vote, within the per-node timeout for ttl and until ctx ends, as an
// attempt would take its time, and returns the error of a TryAcquire that
// made no attempt.
func (c *Client) pacedOut(ctx context.Context, key string, left, ttl time.Duration) error {
	t := nodes.GetTimer(min(left, c.nodeTimeout(ttl)))
	defer nodes.PutTimer(t)
	select {
	case <-t.C:
	case <-ctx.Done():
		return c.notAsked(key, ctx)
	}
	qe := &QuorumError{Op: "acquire", Key: key, Quorum: c.quorum, Nodes: c.unasked(), Err: ErrNotAcquired}
	return &detailed{fmt.Sprintf("redlock: the nodes' votes for %s split: this client paused %v instead of trying",
		quoteKey(key), left.Round(time.Microsecond)), qe}
}
