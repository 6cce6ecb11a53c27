package redlock

import (
	"hash/maphash"
	"sync"
)

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
