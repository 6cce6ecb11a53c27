package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redlock-go/redlock/internal/nodes"
	"github.com/redlock-go/redlock/internal/telemetry"
	"github.com/redlock-go/redlock/internal/wait"
	"github.com/redlock-go/redlock/internal/wire"
)

// Acquire takes the lock named key, retrying with random delays until it is
// acquired or ctx ends. It blocks; when ctx ends during an attempt, it
// returns once that attempt's clean-up (a release of what the attempt took,
// so that nothing stays locked) is answered, at most one per-node timeout
// later. On failure the error wraps ErrNotAcquired
// (with each node's outcome in a *QuorumError) and, when ctx ended, ctx's
// error too: errors.Is(err, context.DeadlineExceeded) tells "gave up waiting"
// apart from a failed attempt with a retry strategy that stopped. When so
// many nodes refuse for a reason no retry fixes (an ACL, a replica, a key of
// the wrong type, a lock name whose key holds data of another type than a
// lock's, without an expiry, or for a reader a sorted set that is no lock's
// readers) that no quorum is possible, it fails at once, with
// errors.Is(err, ErrInvalidOptions) and the first such node named. A string
// without an expiry is taken for the lock of a library that sets none, and
// Acquire waits for its holder to delete it, as long as ctx lets it;
// ForceRelease leaves such a key alone: where it is no lock, delete it by
// hand (Inspect shows its TTL as negative). Bad input
// fails at once, before any request: a nil ctx, an empty key or one above
// 4096 bytes (ErrInvalidKey), a TTL that leaves no validity or exceeds the
// recovery delay (ErrInvalidTTL). Once the Client closes, it stops waiting
// and sends nothing more: ErrClosed.
//
// The returned lock is valid until Lock.Until; the holder must finish its
// work by then, extend it, or use WithAutoRenew and watch Lock.Done.
//
// Goroutines of one Client that wait for the same key are served in the
// order they called Acquire: only the first of them tries the nodes, woken
// by the release announcements (see Conn) or its retry delay.
//
// A lock is not reentrant: Acquire of a key that this Client, or this
// goroutine, holds already waits for that lock's release or expiry as for
// any other holder's, and for a renewed lock until ctx ends. Readers
// (WithShared) share a key.
func (c *Client) Acquire(ctx context.Context, key string, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, key, false, opts)
}

// TryAcquire makes at most one attempt to take the lock named key (see
// below) and does not wait for a release: it returns within the per-node
// timeout, twice when a failed attempt must be cleaned up on a silent
// node. Its errors are those of Acquire. Unlike Acquire, it does not queue
// behind the client's other goroutines waiting for the same key.
//
// So that clients calling it in a loop do not keep splitting the nodes'
// votes, a failed attempt returns only once every node has answered it and
// its clean-up, or the per-node timeout passed, and, when the key was held
// on a node, after a random pause of up to twice what the attempt took,
// within the per-node timeout from the call. After a split vote (some
// nodes granted the attempt, others held the key for another), the client
// that the first node granted tries again at once, and the others make no
// attempt on the key for one to three times what theirs took: a call
// within that time waits it out, within the per-node timeout, and fails
// with ErrNotAcquired without asking the nodes. While a goroutine of the
// Client is in TryAcquire on a key, the others calling TryAcquire on it
// make no attempt of their own: they wait for that one to end and fail
// with ErrNotAcquired, whether it won or not, with a *QuorumError of what
// the nodes answered it (when it won, its grants shown as held). With
// WithLimit or WithShared, an attempt is neither shared nor followed by a
// pause, and returns as soon as the answers settle it.
func (c *Client) TryAcquire(ctx context.Context, key string, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, key, true, opts)
}

func (c *Client) acquire(ctx context.Context, name string, once bool, opts []LockOption) (*Lock, error) {
	if err := c.checkCall(ctx); err != nil {
		return nil, err
	}
	key, cfg, err := c.lockRequest(name, opts)
	if err != nil {
		return nil, err
	}
	c.underway.enter()
	defer c.underway.exit()
	var call *telemetry.Call
	if c.tel != nil {
		ctx, call = c.tel.StartAcquire(ctx, key, cfg.ttl, once)
	}
	lock, err := c.acquireKey(ctx, key, cfg, once, call)
	// A permit's or a reader's single attempt says, as every other failed
	// acquisition does, when no retry would help (ErrInvalidOptions).
	failFast(err)
	if err == nil && c.closing() {
		lock, err = nil, c.releaseWonAtClose(ctx, "the lock on "+quoteKey(name), lock.Release)
	}
	if call != nil {
		endAcquire(call, lock, err)
	}
	return lock, c.closedDuring(err)
}

// releaseWonAtClose releases what a call won as the Client closed, by
// release, and returns the call's error, ErrClosed: a closed Client sends
// nothing more, so its caller could neither renew nor release it, and the
// nodes would keep it until its TTL. Close waits for the call (see
// underway), so the release is sent.
func (c *Client) releaseWonAtClose(ctx context.Context, what string, release func(context.Context) error) error {
	if err := release(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("%w: %s was won as the Client closed, and its release failed: %w", ErrClosed, what, err)
	}
	return fmt.Errorf("%w: %s was won as the Client closed, and released", ErrClosed, what)
}

// closedDuring returns err, the error of a call, wrapped in ErrClosed when
// the Client closed meanwhile: its nodes' "not sent" say why it failed.
func (c *Client) closedDuring(err error) error {
	if err == nil || !c.closing() || errors.Is(err, ErrClosed) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrClosed, err)
}

// closedCause returns ErrClosed once the Client closed, for the Cause of a
// QuorumError whose requests it left unsent; nil before.
func (c *Client) closedCause() error {
	if c.closing() {
		return ErrClosed
	}
	return nil
}

// acquireKey takes the lock on key, the wire's, once or until ctx ends;
// call, when not nil, observes it (telemetry.go).
func (c *Client) acquireKey(ctx context.Context, key string, cfg lockConfig, once bool, call *telemetry.Call) (*Lock, error) {
	switch {
	case cfg.limited:
		return c.acquirePermit(ctx, key, cfg, once, call)
	case cfg.shared:
		return c.acquireShared(ctx, key, cfg, once, call)
	}
	if once {
		return c.tryAcquire(ctx, key, cfg, call)
	}
	a := acquisition{c: c, ctx: ctx, key: key, cfg: cfg, call: call, stopListening: func() {}}
	// Nudged waiters (an election's candidates, at the lead's expiry) try
	// all at once: after its first attempt, each defers to the clients
	// queued before it, as a set waiter does, so that they take the key
	// in the order they came.
	a.place.set = cfg.nudge != nil
	if err := a.takeTurn(); err != nil {
		return nil, err
	}
	lock, err := retryLoop(ctx, c.closed, cfg.retry, cfg.notify, shape[*Lock](&a), a.waitFirst)
	a.end(lock)
	return lock, err
}

// tryAcquire is TryAcquire of a lock: one attempt, which the goroutines of
// this client that call TryAcquire on the key while it is under way share.
// Each making an attempt of its own, they would split the nodes' votes
// among themselves, so that none wins: only the first tries; the others
// wait for its attempt to end, clean-up included, and fail whether it won
// or not. They try, one of them first, only after an attempt that its
// caller's context cut short, which says nothing of the key.
func (c *Client) tryAcquire(ctx context.Context, key string, cfg lockConfig, call *telemetry.Call) (*Lock, error) {
	if left := c.tryPacing.left(key); left > 0 {
		return nil, c.pacedOut(ctx, key, left, cfg.ttl)
	}
	for {
		other := c.waiters.StartTry(key)
		if other == nil {
			break
		}
		select {
		case <-other.Done():
		case <-ctx.Done():
			return nil, c.notAsked(key, ctx)
		}
		if t := other.Outcome.(*sharedTry); !t.cut {
			return nil, t.shared()
		}
	}
	if c.closing() {
		c.waiters.EndTry(key, func() any { return newSharedTry(key, nil, nil, true, c.quorum) })
		return nil, ErrClosed
	}
	start := time.Now()
	lock, err := c.tryAttempt(ctx, key, cfg.ttl, cfg.delay, cfg.owner, cfg.autoRenew)
	failFast(err)
	if lock == nil && heldOnANode(err) {
		took := time.Since(start)
		c.pauseAfterTry(ctx, took, c.splitPause(key, took, err), cfg.ttl)
	}
	cut := lock == nil && ctx.Err() != nil
	c.waiters.EndTry(key, func() any { return newSharedTry(key, lock, err, cut, c.quorum) })
	noteAttempt(call, lock, err)
	return lock, err
}

// pauseAfterTry pauses a TryAcquire whose attempt, which took took with
// its clean-up, a node refused because the key is held: for pause (see
// splitPause), or until ctx ends, but never past the node timeout from the
// call's start, so that the call keeps its bound.
// It is the random delay that Redlock prescribes after a failed attempt,
// so that clients trying for one key stop meeting each other, which a
// caller looping on TryAcquire does not make. Without it, a crowd of such
// callers keeps the nodes busy with attempts that reach them one after the
// other and split their votes; the pauses spread the attempts out, so that
// one finds a majority of nodes free. The goroutines of this client that
// share the attempt wait for the pause too, and the client's next attempt
// follows it.
func (c *Client) pauseAfterTry(ctx context.Context, took, pause, ttl time.Duration) {
	left := min(c.nodeTimeout(ttl)-took, pause)
	if left <= 0 {
		return
	}
	t := nodes.GetTimer(left)
	defer nodes.PutTimer(t)
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// tryPauses bounds the pause after a TryAcquire that the key's holders
// refused, in multiples of the time its attempt took: the longer, the
// fewer split votes in a crowd of clients looping on TryAcquire (64 of
// them on 5 nodes won about twice as often with 2 as with 1, and a third
// more again with 4), and the longer a lone caller waits to hear that the
// key is held (with 2, on average as long again as its attempt took).
const tryPauses = 2

// heldOnANode reports that a node refused a failed acquisition because the
// key is held there: it contends for the key, and the nodes are not just
// slow, silent or recovering.
func heldOnANode(err error) bool {
	qe := quorumError(err)
	return qe != nil && slices.ContainsFunc(qe.Nodes, func(r NodeResult) bool { return r.Outcome == OutcomeHeld })
}

// sharedTry is how the attempt of a goroutine in TryAcquire ended, for the
// goroutines of the same client that called TryAcquire on the key while it
// was under way.
type sharedTry struct {
	// cut: the attempt's caller's context ended, and cut it short.
	cut    bool
	won    bool
	failed QuorumError // what each node answered, a grant shown as held
}

// newSharedTry returns how the attempt on key ended: it granted lock, or
// failed with err; cut is as in sharedTry.
func newSharedTry(key string, lock *Lock, err error, cut bool, quorum int) *sharedTry {
	t := &sharedTry{}
	if cut {
		t.cut = true
		return t
	}
	if lock != nil {
		t.won = true
		t.failed = QuorumError{Op: "acquire", Key: key, Quorum: quorum, Nodes: slices.Clone(lock.nodes), Err: ErrNotAcquired}
		for i := range t.failed.Nodes {
			if t.failed.Nodes[i].Outcome == OutcomeOK {
				t.failed.Nodes[i].Outcome = OutcomeHeld // by the winner
			}
		}
		return t
	}
	qe := quorumError(err)
	if qe == nil {
		t.cut = true // not a verdict of the nodes
		return t
	}
	t.failed = *qe
	t.failed.Nodes = slices.Clone(qe.Nodes)
	return t
}

// shared returns the error of a TryAcquire that shared the attempt, its
// own copy: its caller may change it.
func (t *sharedTry) shared() error {
	qe := t.failed
	qe.Nodes = slices.Clone(t.failed.Nodes)
	verdict := "it failed"
	if t.won {
		verdict = "it won"
	}
	return &detailed{"redlock: another goroutine of this client was trying " + quoteKey(qe.Key) + " at the same time, and " + verdict, &qe}
}

// lockRequest checks a lock name and the options of one call, and returns
// the key on the wire and the call's settings.
func (c *Client) lockRequest(name string, opts []LockOption) (string, lockConfig, error) {
	cfg := c.lockOptions(opts)
	key, err := c.lockKey(name)
	if err != nil {
		return "", cfg, err
	}
	if cfg.limited {
		if err := c.checkLimit(name, cfg.limit, cfg.shared); err != nil {
			return "", cfg, err
		}
	}
	if err := c.checkLockTTL(cfg.ttl); err != nil {
		return "", cfg, err
	}
	if err := checkCallOwner(cfg.owner); err != nil {
		return "", cfg, err
	}
	if err := c.checkLockDelay(cfg.delay, cfg.ttl); err != nil {
		return "", cfg, err
	}
	cfg.ttl, cfg.delay = cfg.ttl.Truncate(time.Millisecond), cfg.delay.Truncate(time.Millisecond)
	return key, cfg, nil
}

// lockOptions returns the settings of one call: the client's defaults,
// changed by opts, in order.
func (c *Client) lockOptions(opts []LockOption) lockConfig {
	cfg := lockConfig{ttl: c.opts.TTL, retry: c.opts.Retry, owner: c.opts.Owner}
	if len(opts) > 0 {
		// Options take a pointer, which escapes: a call without options
		// allocates none.
		withOpts := cfg
		for _, o := range opts {
			if o != nil { // a nil option changes nothing
				o.apply(&withOpts)
			}
		}
		cfg = withOpts
	}
	return cfg
}

// acquisition is one Acquire call that has the turn on its key: the only
// goroutine of this client that tries for the key until it gives the turn
// back (wait.Turns).
type acquisition struct {
	c   *Client
	ctx context.Context
	key string
	cfg lockConfig
	// turn is how the turn came: the lock may be held by this client.
	turn wait.Turn
	// offer is this call's attempt, offered to go out with this client's
	// release of the lock (see handoff); nil once settled.
	offer *handoff
	// carried is the offer once a release took it with it: the attempt is
	// under way, and run collects it instead of trying.
	carried *handoff
	// wake signals release announcements (wait.Waker); nil while not
	// listening.
	wake          *wait.Wakeup
	stopListening func()
	waitFirst     bool // wait for a release or a retry delay before trying
	// place is this client's place in the key's queue: a refused attempt
	// puts it there, and later ones keep it there (see wire.QueueKeys).
	place queuePlace
	// call observes the call's attempts; nil without telemetry.
	call *telemetry.Call
}

// takeTurn waits for the turn on the key behind the client's other
// goroutines waiting for it. Its error is that of an Acquire whose context
// ended in the queue.
func (a *acquisition) takeTurn() error {
	c, ctx, key, cfg := a.c, a.ctx, a.key, a.cfg
	// An attempt is offered to this client's release only where a goroutine
	// of this client has the key's turn or holds its lock: a key nobody
	// here holds is tried at once.
	var offer wait.Offer // a nil *handoff would not be a nil Offer
	if c.waiters.Busy(key) {
		a.offer = c.newHandoff(ctx, key, cfg.ttl, cfg.delay, cfg.owner, cfg.autoRenew, &a.place)
		offer = a.offer
	}
	a.turn = c.waiters.Take(ctx, key, offer)
	if !a.turn.Taken {
		return c.notAsked(key, ctx)
	}
	// A waiter listens for release announcements from before its attempt,
	// so that a release between a failed attempt and the wait is not
	// missed. An uncontended call does not listen until its first attempt
	// failed, nor does one whose turn starts while this client holds the
	// lock: that lock's release reaches it in-process, and carries its
	// attempt. Should that attempt defer to another client queued first,
	// it listens once it failed, for the release of that client, which
	// names this one: it comes a hold and a round trip later at least.
	if a.turn.Queued && !a.turn.HeldHere {
		a.listen()
	}
	// When the turn comes from a goroutine of this client that has just
	// acquired the lock, it is held: wait for its release before trying,
	// with the attempt offered to go out with that release.
	a.waitFirst = a.turn.HeldHere
	if !a.turn.HeldHere && a.offer != nil {
		if a.offer.Withdraw() {
			a.offer = nil // not taken, and now never will be
		} else {
			// The lock was released while the turn came, and the release
			// took the attempt with it.
			a.waitFirst = true
		}
	}
	return nil
}

// wait waits up to delay for a release of the key, by this client or
// announced by the nodes, or for the release that takes this call's offer
// with it (offered for the first wait only).
func (a *acquisition) wait(delay time.Duration) (live, named bool) {
	freed := a.turn.Freed
	a.turn.Freed = nil // a closed channel: use it once
	if freed == nil {
		freed = a.cfg.nudge
	}
	offer := a.offer
	a.offer = nil
	wake := a.wake
	if wake == nil {
		wake = wait.NoWakeup
	}
	var polled bool
	for {
		live, named, polled = waitForRelease(a.ctx, a.c.closed, wake, freed, offer.sentOrNil(), delay)
		if delay = a.heldHereFor(offer, polled); delay == 0 {
			break
		}
	}
	a.place.polled = polled
	if offer != nil && !offer.Withdraw() {
		a.carried = offer // the release took the attempt with it
		return true, false
	}
	return live, named
}

// heldHereFor returns how much longer the first wait of a call whose
// turn started while this client holds the lock goes on, once its delay
// ran out (polled) with the attempt still offered to that lock's release:
// while the lock is held, up to its validity deadline, an attempt would be
// refused, and the release would find no attempt to carry. 0 when the
// wait ends: the lock is no longer held (released, lost, expired), or the
// wait did not run out.
func (a *acquisition) heldHereFor(offer *handoff, polled bool) time.Duration {
	h := a.turn.Holder
	if !polled || offer == nil || h == nil || h.Err() != nil {
		return 0
	}
	return max(time.Until(h.Until()), minRetryPause)
}

// carrying reports that a release carried the call's attempt.
func (a *acquisition) carrying() bool { return a.carried != nil }

// keepPlace renews the client's place in the key's queue, while the call
// listens for the key's releases.
func (a *acquisition) keepPlace() {
	if a.wake != nil && a.wake != wait.NoWakeup && a.place.since != "" {
		a.c.keepPlaces(a.ctx, a.c.id, []string{a.key}, a.place.since)
	}
}

// behind reports that the nodes queued this client behind others that the
// next releases name, while it listens for them.
func (a *acquisition) behind() bool {
	return a.place.behind && a.wake != nil && a.wake != wait.NoWakeup
}

// try makes one attempt, or collects the one a release carried.
func (a *acquisition) try() (*Lock, error) {
	var lock *Lock
	var err error
	if h := a.carried; h != nil {
		a.carried = nil
		<-h.sent
		lock, err = h.collect()
	} else {
		lock, err = a.c.attempt(a.ctx, a.key, a.cfg.ttl, a.cfg.delay, a.cfg.owner, a.cfg.autoRenew, &a.place)
	}
	noteAttempt(a.call, lock, err)
	return lock, err
}

// failed starts listening for the key's releases after a failed attempt,
// telling the waker whether the nodes queued this client behind another.
func (a *acquisition) failed() {
	a.listen()
	a.wake.SetSecond(a.place.second)
}

// notAsked is the error of a call that gave up before its first attempt:
// one whose context ended while this client held the lock says so.
func (a *acquisition) notAsked() error {
	err := a.c.notAsked(a.key, a.ctx)
	if h := a.turn.Holder; h != nil && h.Err() == nil {
		return &detailed{"redlock: " + quoteKey(a.key) + " is held by a lock of this client", err}
	}
	return err
}

// listen starts listening for release announcements of the key, once.
func (a *acquisition) listen() {
	if a.wake == nil {
		a.wake, a.stopListening = a.c.waker.ListenFor(a.key, a.place.second)
	}
}

// end stops listening and gives the turn back, telling the next in line
// whether the lock is now held here. An offer that a release took with it
// as the call gave up is seen through, and its lock, if it won, released;
// a call that gave up leaves the key's queue (giveUpQueues).
func (a *acquisition) end(acquired *Lock) {
	a.stopListening()
	if a.offer != nil && acquired == nil && !a.offer.Withdraw() {
		<-a.offer.sent
		if lock, err := a.offer.collect(); err == nil {
			lock.Release(context.WithoutCancel(a.ctx))
		}
	}
	if acquired != nil {
		acquired.holding = a.c.waiters.GiveBackHeld(a.key, acquired)
		return
	}
	a.c.waiters.GiveBack(a.key, false)
	if a.place.since != "" {
		// It gave up: its entry would keep readers out, and the first
		// place in line, until it lapsed.
		a.c.giveUpQueues(a.ctx, a.c.id, []string{a.key}, a.place.since, a.cfg.ttl)
	}
}

// notAsked is the error of an Acquire whose context ended before it asked
// the nodes: it had ended already, or the call was queued behind another
// goroutine of this client.
func (c *Client) notAsked(key string, ctx context.Context) error {
	return &QuorumError{Op: "acquire", Key: key, Quorum: c.quorum, Nodes: c.unasked(), Err: ErrNotAcquired, Cause: ctxEnded(ctx)}
}

// withCause adds ctx's error to a QuorumError so that errors.Is sees both.
// The QuorumError may be wrapped already: the errors that wrap one make
// their text when it is read (see detailed), so that it shows the cause.
func withCause(err error, ctx context.Context) error {
	if qe := quorumError(err); qe != nil && qe.Cause == nil {
		qe.Cause = ctxEnded(ctx)
	}
	return err
}

// ctxEnded returns ctx's error, or context.DeadlineExceeded once its
// deadline has passed: a call's requests end at ctx's deadline by timers
// of their own, which may fire before ctx's, and the call's error must
// still say that ctx ended it.
func ctxEnded(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// detailed is an error that says more before the error it wraps. Its text
// is made when read, not when it is made: withCause may complete the
// *QuorumError it wraps later.
type detailed struct {
	detail string
	err    error
}

// Error returns the detail, then the wrapped error's text.
func (e *detailed) Error() string { return e.detail + ": " + e.err.Error() }

// Unwrap returns the wrapped error.
func (e *detailed) Unwrap() error { return e.err }

// shape is what the retry loop needs of one kind of acquisition: a lock
// (acquisition), a permit or a reader (repeated), or the locks of several
// keys (multiAcquisition). Each supplies only what differs: its attempt,
// and what its waits end on.
type shape[T any] interface {
	// try makes one attempt.
	try() (T, error)
	// failed is told of a failed attempt, before the wait that follows:
	// a shape starts listening then for the releases it waits for.
	failed()
	// wait waits up to delay for a release that may let the next attempt
	// succeed (see waitForRelease), and reports whether the context is
	// still live and whether a release announcement named this client.
	wait(delay time.Duration) (live, named bool)
	// keepPlace renews, during a long wait, the call's places in the
	// queues and the waiting marks of what it waits for, while it
	// listens (see waitKeepingPlace).
	keepPlace()
	// behind reports that the nodes queued this client behind others that
	// the next releases name: it is woken when its turn comes.
	behind() bool
	// notAsked is the error of a call that gave up before its first
	// attempt.
	notAsked() error
	// carrying reports that the next try collects an attempt that a
	// release carried (see handoff): it is collected whatever happens, so
	// that a lock it won is not left behind.
	carrying() bool
}

// retryLoop is the Redlock retry loop of every shape: wait for a release
// or a delay, try, done if won, back off. It returns the first attempt
// that succeeds, or the last one's error once an attempt fails for a
// reason no retry fixes, ctx ends, or retry gives up; ErrClosed once the
// Client closed (closed). waitFirst makes it wait before the first attempt
// too. notify, when not nil, is told each failed attempt it goes on
// after (WithRetryNotify).
func retryLoop[T any](ctx context.Context, closed <-chan struct{}, retry RetryStrategy, notify func(error), s shape[T], waitFirst bool) (T, error) {
	var zero T
	var lastErr error
	named := false
	var slow congestion
	for attempt := 1; ; attempt++ {
		if waitFirst || attempt > 1 {
			delay, again := retry.NextDelay(attempt)
			if !again {
				return zero, gaveUp(lastErr, s)
			}
			delay = max(delay, minRetryPause)
			var live bool
			if live, named = waitKeepingPlace(s, slow.pause(paced(delay, named, s.behind()))); !live {
				if isClosed(closed) {
					return zero, closedErr(gaveUp(lastErr, s))
				}
				return zero, withCause(gaveUp(lastErr, s), ctx)
			}
		}
		if isClosed(closed) && !s.carrying() {
			// Close came while this call waited for its turn, or at the
			// same moment as the end of its wait: nothing more is sent.
			return zero, closedErr(gaveUp(lastErr, s))
		}
		v, err := s.try()
		switch {
		case err == nil:
			return v, nil
		case failFast(err):
			return zero, err
		case ctx.Err() != nil:
			return zero, withCause(err, ctx)
		case isClosed(closed):
			return zero, closedErr(err)
		}
		lastErr = err
		slow.note(err)
		s.failed()
		if notify != nil {
			notify(detached(err))
		}
	}
}

// closedErr returns the error of a call that Close ended: ErrClosed
// wrapping err, its last attempt's, or that of a call that made none.
func closedErr(err error) error {
	return fmt.Errorf("%w: %w", ErrClosed, err)
}

// isClosed reports that closed is closed.
func isClosed(closed <-chan struct{}) bool {
	select {
	case <-closed:
		return true
	default:
		return false
	}
}

// detached returns a copy of err, a failed attempt's error, for
// WithRetryNotify: the call may still complete the *QuorumError it wraps
// (withCause) while the caller reads the copy.
func detached(err error) error {
	switch e := err.(type) {
	case *QuorumError:
		c := *e
		c.Nodes = slices.Clone(e.Nodes)
		return &c
	case *detailed:
		return &detailed{e.detail, detached(e.err)}
	}
	return err
}

// gaveUp returns the error of a call that stops waiting: the last
// attempt's, or the shape's notAsked when it made none.
func gaveUp[T any](lastErr error, s shape[T]) error {
	if lastErr == nil {
		return s.notAsked()
	}
	return lastErr
}

// paced returns the pause before the next attempt: the retry strategy's
// delay, shortened after an attempt that a release named this client for
// failed (named), and lengthened while the nodes queue this client behind
// others (behind).
func paced(delay time.Duration, named, behind bool) time.Duration {
	if named {
		// The last attempt followed a release that named this client, and
		// failed: most likely it split the votes with the other client
		// named, or met a node whose release was still on its way. Try
		// again soon, at a random moment so as not to meet it again.
		delay = min(delay, randomBetween(time.Millisecond, splitRetryMax))
	}
	if behind {
		// Others are first in line on the nodes: the releases will name
		// them, and this client once its turn comes. Try now and then
		// only, in case a wake-up is lost or the lock expires unreleased.
		delay = max(delay, randomBetween(behindWait/2, behindWait))
	}
	return delay
}

// minRetryPause is the least pause between two attempts of a waiting
// call, whatever its RetryStrategy gives: a strategy that gives 0 would
// send the nodes attempts as fast as they answer, for a release that wakes
// the waiter anyway.
const minRetryPause = time.Millisecond

// splitRetryMax bounds the pause before a waiter tries again after an
// attempt that a release woke it for failed (see paced).
const splitRetryMax = 10 * time.Millisecond

// behindWait bounds the pause of a listening waiter that the nodes queued
// behind clients that the next release names (queuePlace.behind): it is
// woken when its turn comes, and tries meanwhile at about this pace only,
// in case the lock expires unreleased or a wake-up is lost, which this
// much slower polling costs in latency. Well within wire.QueueLasts, so
// that its attempts keep its place in the queue.
const behindWait = wire.QueueLasts / 2

// waitForRelease waits up to delay for a release, or for ctx to end or the
// Client to close (closed), and reports whether the call may go on,
// whether a release announcement named this client (wake.Now), and
// whether the delay ran out first (polled). A waiter that registered with the waker
// before its last attempt wakes on any release announced since that names
// it or nobody (see wait.Waker); freed, when not nil, is closed by a
// release of this client, and sent when such a release took the waiter's
// attempt with it (see handoff).
func waitForRelease(ctx context.Context, closed <-chan struct{}, wake *wait.Wakeup, freed, sent <-chan struct{}, delay time.Duration) (live, named, polled bool) {
	t := nodes.GetTimer(delay)
	defer nodes.PutTimer(t)
	select {
	case <-wake.Now(): // nil without a waker: never ready
		return true, true, false
	case <-freed:
		return true, false, false
	case <-sent:
		return true, false, false
	case <-t.C:
		return true, false, true
	case <-ctx.Done():
		return false, false, false
	case <-closed:
		return false, false, false
	}
}

// checkCall refuses a nil context, which would otherwise panic deep in a
// call with the lock half taken, and a call after Close.
func (c *Client) checkCall(ctx context.Context) error {
	if ctx == nil {
		return errNilContext
	}
	if c.closing() {
		return ErrClosed
	}
	return nil
}

// lockKey returns the key on the wire for a lock name, refusing the keys the
// library keeps beside the locks.
func (c *Client) lockKey(name string) (string, error) {
	key, err := c.key(name)
	if err != nil {
		return "", err
	}
	if wire.Reserved(key) {
		return "", fmt.Errorf("%w: %s is reserved for the library's own keys", ErrInvalidKey, quoteKey(key))
	}
	return key, nil
}

// key returns the lock key on the wire.
func (c *Client) key(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: the key is empty", ErrInvalidKey)
	}
	key := c.opts.KeyPrefix + name
	if len(key) > maxKeyBytes {
		return "", fmt.Errorf("%w: %s is %d bytes, above the %d-byte limit", ErrInvalidKey, quoteKey(key), len(key), maxKeyBytes)
	}
	return key, nil
}

// maxKeyBytes bounds a lock key on the wire, KeyPrefix included. Redis takes
// far longer keys, but a lock name this long is a mistake (a value passed
// as a name), and every request and error would carry it.
const maxKeyBytes = 4096

// checkLockTTL applies every rule on the TTL of one lock operation, as the
// caller gave it (before its truncation to milliseconds).
func (c *Client) checkLockTTL(given time.Duration) error {
	if given == c.opts.TTL {
		return nil // New checked it
	}
	if err := checkTTL(given, c.opts.DriftFactor); err != nil {
		return err
	}
	if err := checkQuarantineTTL(given, c.opts); err != nil {
		return err
	}
	return checkCounterTTL(given, c.opts)
}
