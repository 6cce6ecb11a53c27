package traffic

import (
	"context"
	"errors"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/torture/history"
)

// holding is what the worker holds between a grant and its release: a
// lock (or a permit, or a reader's share), or the locks of several names
// taken together. *redlock.Lock and *redlock.Locks are holdings.
type holding interface {
	Until() time.Time
	Done() <-chan struct{}
	Err() error
	Release(ctx context.Context) error
}

// held is one grant: what the worker holds and each lock of it, one
// unless the worker takes several names together.
type held struct {
	holding
	locks []*redlock.Lock
	// set says that the locks were taken together (Config.Names), which
	// the history records as such even for a single name.
	set bool
}

// attempt returns the invocation of an acquisition attempt: of Key, with
// the semaphore's limit and the reader's mark, or of the names picked for
// it together.
func (w *worker) attempt() history.Event {
	ev := history.Event{Op: history.OpAcquire, Key: w.cfg.Key, Limit: w.cfg.Limit, Shared: w.cfg.Shared}
	if len(w.names) > 0 {
		ev.Key, ev.Names = "", w.names
	}
	return ev
}

// acquire takes the lock of Key (as a writer, or shared as a reader), one
// of its permits with Limit, or the locks of the names picked from Names
// together (see pick): one attempt,
// or a wait of up to WaitFor with Wait.
func (w *worker) acquire(ctx context.Context) (*held, error) {
	if w.cfg.Wait {
		waitCtx, cancel := context.WithTimeout(ctx, w.cfg.waitFor())
		defer cancel()
		ctx = waitCtx
	}
	if len(w.names) > 0 {
		acquireAll := w.client.TryAcquireAll
		if w.cfg.Wait {
			acquireAll = w.client.AcquireAll
		}
		set, err := acquireAll(ctx, w.names, w.lockOptions()...)
		if err != nil {
			return nil, err
		}
		return &held{holding: set, locks: set.Locks(), set: true}, nil
	}
	if w.cfg.Elect {
		return w.campaign(ctx)
	}
	acquire := w.client.TryAcquire
	if w.cfg.Wait {
		acquire = w.client.Acquire
	}
	lock, err := acquire(ctx, w.cfg.Key, w.lockOptions()...)
	if err != nil {
		return nil, err
	}
	return &held{holding: lock, locks: []*redlock.Lock{lock}}, nil
}

// lockOptions returns the options of every acquisition: renewing in the
// background with Renew, a permit with Limit, shared with Shared.
func (w *worker) lockOptions() []redlock.LockOption {
	var opts []redlock.LockOption
	if w.cfg.Renew {
		opts = append(opts, redlock.WithAutoRenew())
	}
	if w.cfg.Limit > 0 {
		opts = append(opts, redlock.WithLimit(w.cfg.Limit))
	}
	if w.cfg.Shared {
		opts = append(opts, redlock.WithShared())
	}
	if w.cfg.LockDelay > 0 {
		opts = append(opts, redlock.WithLockDelay(w.cfg.LockDelay))
	}
	return opts
}

// granted returns the completion of attempt id, granted h at now: the key
// held with its tokens and deadline, or each lock of a set, and the TTL
// unless the lock renews itself, which moves its deadline.
func (w *worker) granted(id, now int64, h *held) history.Event {
	ev := history.Event{Time: now, Type: history.OK, Op: history.OpAcquire, ID: id}
	if !w.cfg.Renew {
		ev.TTL = int64(w.cfg.ttl())
	}
	if h.set {
		ev.Locks = heldLocks(h.locks, now, true)
		return ev
	}
	lock := h.locks[0]
	ev.Key, ev.Token, ev.Fence, ev.Deadline = lock.Key(), lock.Token(), lock.Fence(), deadline(lock, now)
	ev.Nodes = nodeOutcomes(lock.Nodes())
	return ev
}

// release releases h and records the outcome. A renewing worker's
// invocation reports each lock's last deadline.
func (w *worker) release(ctx context.Context, h *held) error {
	id, err := w.invoke(releaseEvent(h, w.cfg.Renew))
	if err != nil {
		return err
	}
	ev := releaseEvent(h, false)
	ev.Type, ev.ID = history.OK, id
	if err := h.Release(ctx); err != nil {
		// Not held (expired) or not released on a quorum: the checkers
		// use the release's invocation time, so the outcome is
		// informational.
		ev.Type, ev.Err = history.Info, err.Error()
		var qe *redlock.QuorumError
		if errors.As(err, &qe) {
			ev.Nodes = nodeOutcomes(qe.Nodes)
		}
	}
	return w.emit(ev)
}

// releaseEvent returns a release of h: the key held and its token, or
// each lock of a set; with withDeadline, the deadline of each lock as of
// now.
func releaseEvent(h *held, withDeadline bool) history.Event {
	ev := history.Event{Op: history.OpRelease}
	if h.set {
		ev.Locks = heldLocks(h.locks, history.Now(), withDeadline)
		return ev
	}
	lock := h.locks[0]
	ev.Key, ev.Token = lock.Key(), lock.Token()
	if withDeadline {
		ev.Deadline = deadline(lock, history.Now())
	}
	return ev
}

// heldLocks returns the key and token of each of locks, and its validity
// deadline on the monotonic clock, as of now, when withDeadline.
func heldLocks(locks []*redlock.Lock, now int64, withDeadline bool) []history.HeldLock {
	out := make([]history.HeldLock, len(locks))
	for i, l := range locks {
		out[i] = history.HeldLock{Key: l.Key(), Token: l.Token(), Fence: l.Fence()}
		if withDeadline {
			out[i].Deadline = deadline(l, now)
		}
	}
	return out
}

// deadline returns lock's validity deadline on the monotonic clock, now
// being the current time there.
func deadline(lock *redlock.Lock, now int64) int64 {
	return now + int64(time.Until(lock.Until()))
}
