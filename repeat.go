package redlock

import (
	"context"
	"slices"
	"time"

	"github.com/redlock-go/redlock/internal/telemetry"
	"github.com/redlock-go/redlock/internal/wait"
	"github.com/redlock-go/redlock/internal/wire"
)

// repeated is the retry loop of an acquisition that is not a mutex's: a
// permit of a semaphore (permits.go) or a shared lock (WithShared). A
// permit's waiters queue on the nodes (see acquirePermit), and offer their
// attempts to this client's releases (see permitHandoff); readers do
// neither. This client's goroutines waiting for a permit take lanes, up to
// the semaphore's limit at once, first come first served (wait.Lanes); one
// with a lane tries the permits no other one claimed, then waits for a
// release of one of the permits it claimed or a retry delay; readers, who
// do not split votes among themselves, each try and wait on their own, and
// every release wakes them all.
type repeated struct {
	c   *Client
	ctx context.Context
	cfg lockConfig
	// key names what is acquired, in errors and in turns.
	key string
	// lanes is how many of this client's goroutines try for key at once
	// (Client.permitLanes); 0 for no turns, in which case every release
	// wakes the call. tookLane, when set, is told the call's ticket once
	// it has a lane.
	lanes    int
	tookLane func(ticket uint64)
	// keys returns the keys whose releases may let the next try succeed;
	// for a permit's waiter, those no other call here claimed, which may
	// change between tries.
	keys func() []string
	// attempt makes one attempt.
	attempt func() (*Lock, error)
	// freed, when set, returns a channel closed by a release in this
	// client that may let the next try succeed, and the function that
	// stops watching for it.
	freed func() (<-chan struct{}, func())
	// wake signals the release announcements of keys once listening;
	// stop ends listening; listened are the keys it listens for.
	wake     *wait.Wakeup
	stop     func()
	listened []string
	// behindOthers, when set, reports that the nodes queued the call
	// behind clients that the next releases name (see queuePlace.behind).
	behindOthers func() bool
	// carrier, when set, offers the call's next attempt to go out with
	// this client's releases that the call waits for (a permit's);
	// carried: a release took it, and the next try collects it.
	carrier carrier
	carried bool
	// keep, when set, renews the waiting marks of the keys the call waits
	// for (shape.keepPlace).
	keep func()
}

// carrier is what a call supplies whose attempt may go out with a release
// of this client (see permitHandoff).
type carrier interface {
	// offer offers the next attempt, and returns the channel closed once
	// a release sent it; nil when nothing is offered.
	offer() <-chan struct{}
	// withdraw takes the offer back, and reports whether no release had
	// taken it.
	withdraw() bool
	// collect completes the attempt a release took.
	collect() (*Lock, error)
}

// try makes one attempt, or collects the one a release carried.
func (r *repeated) try() (*Lock, error) {
	if r.carried {
		r.carried = false
		return r.carrier.collect()
	}
	return r.attempt()
}

// acquire tries once, or until it succeeds, the context ends or the retry
// strategy gives up.
func (r *repeated) acquire(once bool) (*Lock, error) {
	if once {
		return r.attempt()
	}
	if r.lanes == 0 {
		return r.run()
	}
	ticket, taken := r.c.permitLanes.Take(r.ctx, r.key, r.lanes)
	if !taken {
		return nil, r.c.notAsked(r.key, r.ctx)
	}
	if r.tookLane != nil {
		r.tookLane(ticket)
	}
	defer r.c.permitLanes.GiveBack(r.key)
	return r.run()
}

// run tries, then waits for a release or a retry delay, until a try
// succeeds, the context ends or the retry strategy gives up (retryLoop). It
// listens once a try failed.
func (r *repeated) run() (*Lock, error) {
	r.wake, r.stop = wait.NoWakeup, func() {}
	defer func() { r.stop() }()
	lock, err := retryLoop(r.ctx, r.c.closed, r.cfg.retry, r.cfg.notify, shape[*Lock](r), false)
	if r.carried {
		// The call gave up as a release took its attempt with it: see it
		// through, and release what it won.
		if l, err := r.carrier.collect(); err == nil {
			l.Release(context.WithoutCancel(r.ctx))
		}
	}
	return lock, err
}

// listen starts listening for the releases of r's keys, or listens anew
// once they changed: a permit's waiter listens for the permits no other
// call here claimed.
func (r *repeated) listen() {
	keys := r.keys()
	if r.wake != wait.NoWakeup && slices.Equal(keys, r.listened) {
		return
	}
	r.stop()
	r.wake, r.stop, r.listened = wait.NoWakeup, func() {}, keys
	if len(keys) > 0 {
		r.wake, r.stop = r.c.waker.ListenForAll(keys, r.lanes == 0)
	}
}

// failed listens from before the wait that follows the first failed try
// (a release during the try may be missed, and the retry delay covers
// it), and anew when the keys to listen for changed since.
func (r *repeated) failed() { r.listen() }

// wait waits for a release announced to r, one in this client, or the
// retry delay; a release of this client may take r's next attempt with it.
func (r *repeated) wait(delay time.Duration) (live, named bool) {
	if r.carried {
		// A release took the attempt as the last wait ended (see
		// waitKeepingPlace): the next try collects it, and no other
		// may be offered meanwhile.
		return true, false
	}
	var freed <-chan struct{}
	stop := func() {}
	if r.freed != nil {
		freed, stop = r.freed()
	}
	defer stop()
	var sent <-chan struct{}
	if r.carrier != nil {
		sent = r.carrier.offer()
	}
	live, named, _ = waitForRelease(r.ctx, r.c.closed, r.wake, freed, sent, delay)
	if sent != nil && !r.carrier.withdraw() {
		r.carried = true // the release took the attempt with it
		return true, false
	}
	return live, named
}

// carrying reports that a release carried the call's attempt.
func (r *repeated) carrying() bool { return r.carried }

// keepPlace renews what the call waits with on the nodes, while it
// listens: the waiting marks of a reader's key, or of the permits a
// permit's waiter listens for, and not its places in their queues, as a
// set's waiter (see multiAcquisition.keepPlace).
func (r *repeated) keepPlace() {
	if r.keep != nil && r.wake != wait.NoWakeup {
		r.keep()
	}
}

// behind reports that the nodes queued the call behind clients that the
// next releases name, while it listens for them: a permit's waiter; the
// nodes keep no queue of readers.
func (r *repeated) behind() bool {
	return r.behindOthers != nil && r.wake != wait.NoWakeup && r.behindOthers()
}

// notAsked is the error of a call that gave up before its first try.
func (r *repeated) notAsked() error { return r.c.notAsked(r.key, r.ctx) }

// A read-write lock on a name is its mutex, which writers take (Acquire
// without WithShared), and its readers (WithShared), kept at the same key
// on each node as a sorted set of their tokens by expiry (lua/readers.lua):
// a writer's SET NX fails while a reader holds the key, and a reader is
// refused while the key holds a writer's token. Waiting readers and writers
// queue on the nodes (a refused Acquire), each dated when it began waiting,
// and are served in that order: a reader is refused while a writer queued
// before it waits, and a writer defers to a reader first in line that came
// before it, so that neither a stream of readers nor one of writers starves
// the other; the readers that come between two writers take the key
// together. A reader and a writer exclude each other by the Redlock
// argument: both need a majority of nodes, and a node grants only one kind
// at a time.

// WithShared makes the call take the named lock shared, as a reader of a
// read-write lock: any number of readers hold it at once, and no writer,
// which takes it by the same name without WithShared. Readers and writers
// waiting in Acquire are served in the order they came: a waiting writer
// keeps out the readers that came after it, and a waiting reader the
// writers that came after it, so that neither kind starves the other. A
// caller that only calls TryAcquire never waits, and a stream of the other
// kind can keep it out: wait in Acquire, with a deadline in its context. Locks are not reentrant, as sync.RWMutex's
// are not: a reader that takes the lock again while a writer waits waits
// behind that writer, which waits for the first reading to end. A reader's Lock has everything a lock has:
// validity, Extend, auto-renewal, Done, Release, and a fencing token from
// the same counter as the writers' (see Lock.Fence for how a resource
// compares them).
func WithShared() LockOption {
	return lockOption(func(c *lockConfig) { c.shared = true })
}

// acquireShared takes the lock key shared: once, or until ctx ends. This
// client's readers of one key try at once, and a release wakes them all:
// they do not split votes among themselves. A reader that waits has a
// place of its own in the key's queue, dated when it began waiting: the
// writers that came later defer to it (see lua/reader_entries.lua). It
// keeps the place while it waits, and leaves it when it gives up; its
// lock's release leaves it otherwise.
func (c *Client) acquireShared(ctx context.Context, key string, cfg lockConfig, once bool, call *telemetry.Call) (*Lock, error) {
	var place *queuePlace
	keep := func() { c.keepMarks(ctx, []string{key}) }
	if !once {
		place = &queuePlace{entry: wire.ReaderEntry(c.id, c.readers.Add(1))}
		keep = func() { c.keepPlaces(ctx, place.entry, []string{key}, place.since) }
	}
	try := func() (*Lock, error) {
		lock, err := c.attemptShared(ctx, key, cfg.ttl, cfg.delay, cfg.owner, cfg.autoRenew, place)
		noteAttempt(call, lock, err)
		return lock, err
	}
	r := repeated{c: c, ctx: ctx, cfg: cfg, key: key, keys: func() []string { return []string{key} }, attempt: try, keep: keep}
	lock, err := r.acquire(once)
	if err != nil && place != nil && place.since != "" {
		// It gave up: its entry would hold back the writers that came
		// after it until it lapsed.
		c.giveUpQueues(ctx, place.entry, []string{key}, place.since, cfg.ttl)
	}
	return lock, err
}
