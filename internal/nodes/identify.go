package nodes

import (
	"context"
	"sync"
	"sync/atomic"
)

// firstUse holds a node's requests until check passes for it, once: the
// Client's check that the node is no other entry's server (see
// Set.IdentifyFirst). A nil *firstUse holds nothing.
type firstUse struct {
	check  func(ctx context.Context, node int) (err error, final bool)
	mu     sync.Mutex // one check at a time
	passed atomic.Bool
	failed error // a final verdict of check, under mu
}

// IdentifyFirst makes each node of the set pass check before its first
// request is sent: until check returns nil for a node, each request to
// it runs check again instead, and fails with check's error unsent. An
// error check calls final fails the node's requests for good, without
// running check again. The caller calls it before the set's first
// request.
func (n *Set) IdentifyFirst(check func(ctx context.Context, node int) (err error, final bool)) {
	for _, p := range n.pipes {
		p.identity = &firstUse{check: check}
	}
}

// Identified lets every node's requests go without IdentifyFirst's check:
// the nodes were checked another way. The caller calls it before the
// set's first request.
func (n *Set) Identified() {
	for _, p := range n.pipes {
		p.identity = nil
	}
}

// wait returns nil once check passed for node, running it under ctx while
// it has not: its error otherwise.
func (f *firstUse) wait(ctx context.Context, node int) error {
	if f == nil || f.passed.Load() {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.passed.Load() {
		return nil
	}
	if f.failed != nil {
		return f.failed
	}
	err, final := f.check(ctx, node)
	if err != nil {
		if final {
			f.failed = err
		}
		return err
	}
	f.passed.Store(true)
	return nil
}
