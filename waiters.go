package redlock

import (
	"context"
	"hash/maphash"
	"sync"
)

// turnShards spreads the per-key queues over independent mutexes so that
// goroutines locking different keys rarely wait on each other's bookkeeping.
const turnShards = 64

// turns lets one goroutine of a Client at a time try for a given key; the
// others queue behind it, first come first served. Without it, goroutines of
// one process that wait for the same lock would wake together and split the
// nodes' votes so that none wins, and a goroutine releasing a lock could take
// it straight back ahead of those that waited.
type turns struct {
	seed   maphash.Seed
	shards [turnShards]turnShard
}

type turnShard struct {
	mu     sync.Mutex
	queues map[string]*turnQueue
}

// turnQueue is the state of one key: whether a goroutine has the turn, the
// goroutines waiting for it, in order, and whether this client holds the
// lock. It exists while any of the three is so.
type turnQueue struct {
	busy    bool // a goroutine has the turn
	waiting []*waiter
	// heldHere: this client holds the lock, acquired in an earlier turn,
	// and freed is closed when it releases it.
	heldHere bool
	freed    chan struct{}
	// handoff is the attempt of the goroutine whose turn it is, offered to
	// go out with this client's release of the lock; nil when none is.
	handoff *handoff
}

// waiter is a goroutine queued for a turn.
type waiter struct {
	handed chan struct{} // closed when the turn is the waiter's
	// offer is the waiter's attempt, to go out with this client's release
	// of the lock if its turn starts with the lock held here; may be nil.
	offer *handoff
	// The state of the lock when the turn was handed over, set before
	// handed is closed: a release may follow at once, and take then still
	// reports that the offer was parked.
	heldHere bool
	freed    chan struct{}
}

// turn is the outcome of take.
type turn struct {
	taken    bool // the caller has the turn and must give it back
	queued   bool // the caller waited behind another goroutine
	heldHere bool // this client holds the lock, acquired in an earlier turn
	// freed is closed when the lock held here is released; nil unless
	// heldHere.
	freed <-chan struct{}
}

func newTurns() *turns {
	t := &turns{seed: maphash.MakeSeed()}
	for i := range t.shards {
		t.shards[i].queues = map[string]*turnQueue{}
	}
	return t
}

func (t *turns) shard(key string) *turnShard {
	return &t.shards[maphash.String(t.seed, key)%turnShards]
}

// take waits for the turn on key, or for ctx to end. The caller must call
// giveBack when the result says the turn was taken. offer, when not nil, is
// the caller's attempt, which a release of this client may take with it
// once the caller's turn started with the lock held here; see handoff.
func (t *turns) take(ctx context.Context, key string, offer *handoff) turn {
	s := t.shard(key)
	s.mu.Lock()
	q, ok := s.queues[key]
	if !ok {
		s.queues[key] = &turnQueue{busy: true}
		s.mu.Unlock()
		return turn{taken: true}
	}
	if !q.busy {
		// Nobody else waits, but this client holds the lock.
		q.busy = true
		if offer != nil {
			q.handoff = offer
		}
		tn := turn{taken: true, heldHere: q.heldHere, freed: q.freed}
		s.mu.Unlock()
		return tn
	}
	w := &waiter{handed: make(chan struct{}), offer: offer}
	q.waiting = append(q.waiting, w)
	s.mu.Unlock()

	select {
	case <-w.handed:
		return turn{taken: true, queued: true, heldHere: w.heldHere, freed: w.freed}
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, other := range q.waiting {
		if other == w {
			q.waiting = append(q.waiting[:i:i], q.waiting[i+1:]...)
			return turn{queued: true}
		}
	}
	if offer != nil && !offer.withdraw() {
		// A release took the caller's attempt with it: the caller must see
		// it through.
		return turn{taken: true, queued: true, heldHere: true, freed: w.freed}
	}
	// The turn was handed over while ctx ended: pass it on as it came.
	t.giveLocked(s, key, q, false)
	return turn{queued: true}
}

// giveBack ends the caller's turn on key and hands it to the next in line,
// telling it whether the lock is held here: acquired in the caller's turn,
// or earlier and not released yet. When the caller acquired the lock, it
// returns the channel to pass to released when the lock is released.
func (t *turns) giveBack(key string, acquired bool) (freed chan struct{}) {
	s := t.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[key]
	t.giveLocked(s, key, q, acquired)
	if acquired {
		return q.freed
	}
	return nil
}

// released tells the goroutine whose turn started while this client held
// the lock on key, acquired with freed (from giveBack), that the lock was
// released. A release of an earlier lock of the key, which handed it over
// to a newer one (see handoff), leaves the newer one's state alone.
func (t *turns) released(key string, freed chan struct{}) {
	s := t.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[key]
	if freed == nil || q == nil || q.freed != freed {
		return
	}
	close(q.freed)
	q.heldHere, q.freed, q.handoff = false, nil, nil
	if !q.busy && len(q.waiting) == 0 {
		delete(s.queues, key)
	}
}

func (t *turns) giveLocked(s *turnShard, key string, q *turnQueue, acquired bool) {
	if acquired {
		q.heldHere, q.freed = true, make(chan struct{})
	}
	q.handoff = nil
	if len(q.waiting) == 0 {
		q.busy = false
		if !q.heldHere {
			delete(s.queues, key)
		}
		return
	}
	next := q.waiting[0]
	q.waiting = q.waiting[1:]
	if q.heldHere {
		q.handoff = next.offer
	}
	next.heldHere, next.freed = q.heldHere, q.freed
	close(next.handed)
}

// busy reports whether a goroutine of this client has the turn on key or
// holds its lock. The answer may be stale at once.
func (t *turns) busy(key string) bool {
	s := t.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.queues[key]
	return ok
}

// takeHandoff returns the attempt offered to go out with this client's
// release of key, now the caller's to launch and submit; nil when none is.
func (t *turns) takeHandoff(key string) *handoff {
	s := t.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[key]
	if q == nil || q.handoff == nil {
		return nil
	}
	h := q.handoff
	q.handoff = nil
	if !h.state.CompareAndSwap(handoffOffered, handoffTaken) {
		return nil
	}
	return h
}

// trailingReleases remembers, per key, the last release of this client that
// returned before every node had answered (a release returns at a quorum),
// until those nodes have answered. The next acquisition of the key by this
// client waits for them on those nodes, as a lock's release waits for its
// own acquisition's lagging requests (see lagging): over a connection pool
// the acquisition could otherwise reach such a node before the release,
// find the old lock there, and fail, though this client released it.
type trailingReleases struct {
	seed   maphash.Seed
	shards [turnShards]trailingShard
}

type trailingShard struct {
	mu   sync.Mutex
	keys map[string]*lagging
}

func newTrailingReleases() *trailingReleases {
	return &trailingReleases{seed: maphash.MakeSeed()}
}

func (t *trailingReleases) shard(key string) *trailingShard {
	return &t.shards[maphash.String(t.seed, key)%turnShards]
}

// add records the release of key whose requests to lag.nodes may still be
// under way; nil is a release that every node answered. The record goes
// once they have all answered.
func (t *trailingReleases) add(key string, lag *lagging) {
	if lag == nil {
		return
	}
	s := t.shard(key)
	s.mu.Lock()
	if s.keys == nil {
		s.keys = make(map[string]*lagging)
	}
	s.keys[key] = lag
	s.mu.Unlock()
	lag.earlier.afterLanding(func() {
		s.mu.Lock()
		if s.keys[key] == lag {
			delete(s.keys, key)
		}
		s.mu.Unlock()
	})
}

// of returns the nodes where the last release of key may still be under
// way, or nil when none may be.
func (t *trailingReleases) of(key string) *lagging {
	s := t.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[key]
}
