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

// turnQueue is the queue for one key: a turn is taken while it exists, and
// waiting goroutines are handed the turn in order.
type turnQueue struct {
	waiting []chan struct{}
	// heldHere: the last turn ended with the lock acquired, so the next one
	// starts with the lock held by this client, and freed is closed when
	// this client releases it.
	heldHere bool
	freed    chan struct{}
}

// turn is the outcome of take.
type turn struct {
	taken    bool // the caller has the turn and must give it back
	queued   bool // the caller waited behind another goroutine
	heldHere bool // the goroutine before it acquired the lock
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
// giveBack when the result says the turn was taken.
func (t *turns) take(ctx context.Context, key string) turn {
	s := t.shard(key)
	s.mu.Lock()
	q, busy := s.queues[key]
	if !busy {
		s.queues[key] = &turnQueue{}
		s.mu.Unlock()
		return turn{taken: true}
	}
	handed := make(chan struct{})
	q.waiting = append(q.waiting, handed)
	s.mu.Unlock()

	select {
	case <-handed:
		s.mu.Lock()
		defer s.mu.Unlock()
		return turn{taken: true, queued: true, heldHere: q.heldHere, freed: q.freed}
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range q.waiting {
		if c == handed {
			q.waiting = append(q.waiting[:i:i], q.waiting[i+1:]...)
			return turn{queued: true}
		}
	}
	// The turn was handed over while ctx ended: pass it on as it came.
	t.giveLocked(s, key, q, q.heldHere)
	return turn{queued: true}
}

// giveBack ends the caller's turn on key and hands it to the next in line,
// telling it whether the caller acquired the lock.
func (t *turns) giveBack(key string, acquired bool) {
	s := t.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	t.giveLocked(s, key, s.queues[key], acquired)
}

// released tells the goroutine whose turn started with key held here that
// this client has released it.
func (t *turns) released(key string) {
	s := t.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.queues[key]; q != nil && q.freed != nil {
		close(q.freed)
		q.freed = nil
	}
}

func (t *turns) giveLocked(s *turnShard, key string, q *turnQueue, acquired bool) {
	if len(q.waiting) == 0 {
		delete(s.queues, key)
		return
	}
	q.heldHere = acquired
	q.freed = nil
	if acquired {
		q.freed = make(chan struct{})
	}
	next := q.waiting[0]
	q.waiting = q.waiting[1:]
	close(next)
}
