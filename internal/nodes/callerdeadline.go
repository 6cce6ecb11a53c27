package nodes

import (
	"context"
	"reflect"
	"sync"
	"time"
)

// maxInlineSlack bounds how much earlier than its own deadline the context
// of a request asked inline may end (see callerDeadline): the requests of
// one caller whose deadlines fall within it share one context and one
// timer, where each would cost a context, a timer and a channel of its own,
// and the timer's arming a wake-up of the runtime's network poller. A
// request gets up to this much less than the per-node timeout, never more;
// for short timeouts, at most a 32nd of the timeout.
const maxInlineSlack = time.Millisecond

// callerDeadline hands out the contexts of the requests that callers send
// by themselves: a context derived from the caller's that ends at the
// request's deadline, shared with the later requests from the same
// context while their deadlines fall within the slack after its end. It
// keeps one such context for each of the two contexts used last, so that a
// caller's acquisitions and releases (made from a context without
// cancellation, see Uncancelled) each keep theirs. A shared context ends by
// its own timer, once the last of its requests no longer needs it.
type callerDeadline struct {
	// detached: the contexts keep the parent's values but neither its
	// cancellation nor its deadline (see pipe.requestContext).
	detached bool

	mu    sync.Mutex
	slots [2]deadlineSlot
	last  int // the slot used last
}

// deadlineSlot is one context that callerDeadline shares.
type deadlineSlot struct {
	parent context.Context // the context it was derived from
	from   context.Context // parent, or parent without its cancellation when detached
	ctx    context.Context
	end    time.Time
	cancel context.CancelFunc // unused: the context ends at its deadline
}

// until returns a context that ends when parent does, and at deadline or
// at most slack before it, for a request under a per-node timeout.
func (d *callerDeadline) until(parent context.Context, deadline time.Time, timeout time.Duration) context.Context {
	if pd, ok := parent.Deadline(); ok && !pd.After(deadline) && !d.detached {
		return parent // it ends first: no context of its own needed
	}
	slack := min(maxInlineSlack, timeout/32)
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.slots {
		sl := &d.slots[i]
		if sl.ctx != nil && sameContext(sl.parent, parent) && !sl.end.After(deadline) && deadline.Sub(sl.end) <= slack && sl.ctx.Err() == nil {
			d.last = i
			return sl.ctx
		}
	}
	// Replace the slot used least recently. The context replaced, if any,
	// ends at its deadline: requests may still use it.
	d.last = 1 - d.last
	from := d.from(parent)
	sl := &d.slots[d.last]
	sl.ctx, sl.cancel = context.WithDeadline(from, deadline)
	sl.parent, sl.from, sl.end = parent, from, deadline
	return sl.ctx
}

// from returns the context to derive a new one from parent: parent, or
// parent without its cancellation when detached, as a slot made from
// parent before holds it.
func (d *callerDeadline) from(parent context.Context) context.Context {
	if !d.detached {
		return parent
	}
	for _, sl := range d.slots {
		if sl.from != nil && sameContext(sl.parent, parent) {
			return sl.from
		}
	}
	return context.WithoutCancel(parent)
}

// sameContext reports whether a and b are the same context. Contexts are
// compared as interface values, which panics on a type that cannot be
// compared: such contexts are never the same.
func sameContext(a, b context.Context) bool {
	if a == nil || b == nil || !reflect.TypeOf(b).Comparable() {
		return false
	}
	return a == b
}
