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

// take waits for the turn on key, or for ctx to end, and reports whether the
// turn was taken, and whether the caller had to queue for it. The caller must
// call giveBack after a true return.
func (t *turns) take(ctx context.Context, key string) (taken, queued bool) {
	s := t.shard(key)
	s.mu.Lock()
	q, busy := s.queues[key]
	if !busy {
		s.queues[key] = &turnQueue{}
		s.mu.Unlock()
		return true, false
	}
	handed := make(chan struct{})
	q.waiting = append(q.waiting, handed)
	s.mu.Unlock()

	select {
	case <-handed:
		return true, true
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range q.waiting {
		if c == handed {
			q.waiting = append(q.waiting[:i:i], q.waiting[i+1:]...)
			return false, true
		}
	}
	// The turn was handed over while ctx ended: pass it on.
	t.giveLocked(s, key, q)
	return false, true
}

// giveBack ends the caller's turn on key and hands it to the next in line.
func (t *turns) giveBack(key string) {
	s := t.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	t.giveLocked(s, key, s.queues[key])
}

func (t *turns) giveLocked(s *turnShard, key string, q *turnQueue) {
	if len(q.waiting) == 0 {
		delete(s.queues, key)
		return
	}
	next := q.waiting[0]
	q.waiting = q.waiting[1:]
	close(next)
}
