package rueidis

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// connectBackoff is how long after a failed attempt to make a client the
// calls fail at once with its error, instead of making another: every
// lock call would otherwise dial a node that is down, a storm of attempts
// under load. Longer spares more of them, but a node that is back waits
// longer to vote.
const connectBackoff = 500 * time.Millisecond

// connector makes the rueidis client of a Conn from NewURL on first use.
// rueidis.NewClient connects at once, and for a cluster or a Sentinel set
// it returns no client at all while none of their nodes answers; making it
// on first use lets NewURL do no I/O, and gives a node that is down at
// Dial a Conn that connects once it is back. Concurrent calls share one
// attempt, each waiting no longer than its context; the next call after a
// failed attempt makes another, once connectBackoff has passed. It is safe
// for concurrent use.
type connector struct {
	connect func() (rueidis.Client, error) // one attempt; no client on error
	ready   atomic.Pointer[rueidis.Client] // set once an attempt succeeded

	mu      sync.Mutex
	pending chan struct{} // closed when the attempt under way ends; nil when none
	err     error         // why the last attempt failed
	failed  time.Time     // when it did
	closed  bool
}

// client returns the client, making it first if no attempt succeeded yet.
// It blocks until the attempt under way ends or ctx does.
func (k *connector) client(ctx context.Context) (rueidis.Client, error) {
	if c := k.ready.Load(); c != nil {
		return *c, nil
	}
	k.mu.Lock()
	switch {
	case k.closed:
		k.mu.Unlock()
		return nil, rueidis.ErrClosing
	case k.pending == nil && time.Since(k.failed) < connectBackoff:
		err := k.err
		k.mu.Unlock()
		return nil, err
	case k.ready.Load() != nil: // an attempt succeeded since the first look
		k.mu.Unlock()
		return *k.ready.Load(), nil
	case k.pending == nil:
		k.pending = make(chan struct{})
		go k.attempt(k.pending)
	}
	pending := k.pending
	k.mu.Unlock()
	select {
	case <-pending:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if c := k.ready.Load(); c != nil {
		return *c, nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return nil, k.err
}

// attempt makes the client once, and closes done when it is through.
func (k *connector) attempt(done chan struct{}) {
	c, err := k.connect()
	k.mu.Lock()
	defer k.mu.Unlock()
	defer close(done)
	k.pending = nil
	switch {
	case err != nil:
		k.err, k.failed = err, time.Now()
	case k.closed:
		c.Close()
	default:
		k.ready.Store(&c)
	}
}

// current returns the client, or nil if no attempt succeeded yet.
func (k *connector) current() rueidis.Client {
	if c := k.ready.Load(); c != nil {
		return *c
	}
	return nil
}

// close closes the client, and makes every later call fail with
// rueidis.ErrClosing; an attempt under way closes its client when it
// ends.
func (k *connector) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed, k.err = true, rueidis.ErrClosing
	if c := k.ready.Load(); c != nil {
		(*c).Close()
	}
}
