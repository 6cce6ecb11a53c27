package redlock

import "sync"

// permitClaims say which of this client's calls waiting for a semaphore
// asks the nodes for each permit: several calls of one client try at once
// (see wait.Lanes), each only for permits no other one claimed. So they
// never split the nodes' votes among themselves, and a permit's queue on
// the nodes, which keeps one entry per client, holds the place of one call
// of this client at most: the one that claimed the permit. A call keeps
// its claims until it ends, whether it took a permit or gave up, having
// left the queues it entered (a leave takes out only the entry that the
// leaving call made: see lua/release.lua). A permit held here is no one's
// to claim: the calls that find it held offer their attempts to its
// release (see permitHandoff).
//
// A call that skipped a permit another call claimed waits for a claim to
// end (ended), the oldest first.
type permitClaims struct {
	mu    sync.Mutex
	byKey map[string]*permits
	ended broadcast
}

// claim claims the permit key for call p, and reports whether it is p's:
// unclaimed before, or claimed by p already.
func (pc *permitClaims) claim(key string, p *permits) bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.byKey == nil {
		pc.byKey = map[string]*permits{}
	}
	switch pc.byKey[key] {
	case p:
		return true
	case nil:
		pc.byKey[key] = p
		return true
	}
	return false
}

// freeFor reports whether the permit key is unclaimed, or p's.
func (pc *permitClaims) freeFor(key string, p *permits) bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	owner := pc.byKey[key]
	return owner == nil || owner == p
}

// release ends the claims of call p on keys, and wakes the oldest call
// waiting for a claim to end (ended.changedFirst): a permit whose claim
// ended may be free, or held here since, and that call, retrying, claims
// it or offers its attempt to its release. One at a time, in the order
// the calls came, as the turns of a mutex go.
func (pc *permitClaims) release(p *permits, keys []string) {
	if len(keys) == 0 {
		return
	}
	pc.mu.Lock()
	for _, key := range keys {
		if pc.byKey[key] == p {
			delete(pc.byKey, key)
		}
	}
	pc.mu.Unlock()
	pc.ended.changedFirst()
}

// broadcast tells the goroutines that watch it of its next change: all of
// them (changed), or the one of lowest rank (changedFirst).
type broadcast struct {
	mu       sync.Mutex
	changes  uint64 // the changes so far
	watchers map[uint64]watcher
	nextID   uint64
}

// watcher is a watch's function and its rank.
type watcher struct {
	fn   func()
	rank uint64
}

// changed counts a change and tells every watcher.
func (b *broadcast) changed() {
	b.mu.Lock()
	b.changes++
	watchers := b.watchers
	b.watchers = nil
	b.mu.Unlock()
	for _, w := range watchers {
		w.fn()
	}
}

// changedFirst counts a change and tells the watcher of lowest rank; the
// others hear of it when they next watch (see watch).
func (b *broadcast) changedFirst() {
	b.mu.Lock()
	b.changes++
	var first *watcher
	var firstID uint64
	for id, w := range b.watchers {
		if first == nil || w.rank < first.rank {
			first, firstID = &w, id
		}
	}
	if first != nil {
		delete(b.watchers, firstID)
	}
	b.mu.Unlock()
	if first != nil {
		first.fn()
	}
}

// generation returns the number of changes so far, for watch.
func (b *broadcast) generation() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changes
}

// watch calls fn once, at the first change past generation since that
// tells it: at once if there was one since. rank orders the watchers for
// changedFirst. stop ends the watch.
func (b *broadcast) watch(since, rank uint64, fn func()) (stop func()) {
	b.mu.Lock()
	if b.changes != since {
		b.mu.Unlock()
		fn()
		return func() {}
	}
	if b.watchers == nil {
		b.watchers = map[uint64]watcher{}
	}
	b.nextID++
	id := b.nextID
	b.watchers[id] = watcher{fn: fn, rank: rank}
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		delete(b.watchers, id)
		b.mu.Unlock()
	}
}
