package nodes

import (
	"sync"
	"sync/atomic"
)

// inflight counts the requests to single nodes not yet answered, some
// possibly after their fan-out returned, so that Drain can wait for them
// while new fan-outs may still start (a sync.WaitGroup may not grow while
// it is waited for).
type inflight struct {
	n    atomic.Int64
	mu   sync.Mutex
	idle chan struct{} // closed when n reaches 0; nil while nobody waits
}

// add counts k more requests.
func (r *inflight) add(k int) { r.n.Add(int64(k)) }

// done counts one request answered.
func (r *inflight) done() {
	if r.n.Add(-1) != 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.idle != nil && r.n.Load() == 0 {
		close(r.idle)
		r.idle = nil
	}
}

// settled returns a channel closed once no request is under way.
func (r *inflight) settled() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.idle == nil {
		r.idle = make(chan struct{})
	}
	if r.n.Load() == 0 {
		close(r.idle)
		idle := r.idle
		r.idle = nil
		return idle
	}
	return r.idle
}
