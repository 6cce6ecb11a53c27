package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redlock-go/redlock/internal/wait"
)

// Several keys are taken all or nothing: one attempt asks every node for
// every key at once, each key by its own Redlock attempt (Client.attempt),
// and keeps the keys only when every one of them was granted; otherwise it
// releases at once those that were. No client ever holds some keys of a set
// while it waits for the others, so two clients asking for overlapping sets
// in crossing orders cannot deadlock: each wait ends with the release or
// the expiry of a lock held in full by someone else.

// maxLockKeys bounds the names of one AcquireAll: each of its attempts runs
// an attempt per key at once, and a failed one releases those granted, so
// the bound keeps the requests of one call to each node, and the clean-up
// of a failed attempt, small. Sets of locks are typically a handful of rows
// or resources; a larger set is better served by a lock on their parent.
const maxLockKeys = 64

// Locks is a set of locks taken together by AcquireAll or TryAcquireAll:
// one Lock per name, each with its own validity, fencing token and
// renewal. The set is held while every one of them is. Only AcquireAll and
// TryAcquireAll make one. It is safe for concurrent use; it must not be
// copied.
type Locks struct {
	locks []*Lock // one per name, sorted by name

	// releasing makes concurrent Release calls take turns, so that one of
	// them releases the set and the others find it released.
	releasing sync.Mutex

	watch sync.Once     // makes done, on first use of Done
	done  chan struct{} // closed once any lock ended
}

// AcquireAll takes the locks of every name in names together, retrying
// until it holds them all or ctx ends. It blocks. Each attempt asks every
// node for every key at once; when a key is refused, the keys that were
// granted are released at once, and the call waits for the release of a
// refused key (see Conn) or for a retry delay (Options.Retry) before
// trying every key again. It never holds some keys while it waits for the
// others, so that clients asking for overlapping sets, in whatever order,
// do not deadlock. Keys in different hash slots of a Redis Cluster are
// fine: each key is a lock of its own.
//
// The options apply to every lock: WithTTL, WithAutoRenew, which renews
// each lock once the set is held, until one of them ends (then the set is
// over, and the others expire at their deadlines unless released first),
// and WithShared, which takes every key as
// a reader. WithLimit does not combine with AcquireAll (ErrInvalidOptions).
//
// Errors are those of Acquire, for the set: a failed attempt's error says
// how many keys were refused and wraps the *QuorumError of one of them
// (of a key that a node found held by another holder, when there is one),
// so that errors.Is(err, ErrNotAcquired) and errors.As with a *QuorumError
// work; when ctx ended, it wraps ctx's error too. Bad input fails at once,
// before any request: a nil ctx; no name, more than 64 names, a name listed
// twice, or a name Acquire refuses (ErrInvalidKey); WithLimit
// (ErrInvalidOptions); a TTL Acquire refuses (ErrInvalidTTL).
//
// While it waits, the call keeps a place in the nodes' queue of waiting
// clients of every key, all dated when the call began, and the nodes keep
// a key that is free for the oldest such waiter until it takes them all:
// waiters whose sets overlap are served in the order they called, none
// starved by later ones that keep winning part of its set. The goroutines
// of one Client waiting in AcquireAll for sets that share a key take
// turns, in the order they called; a set that shares no key with an
// earlier call waits for none. Acquire's waiters and TryAcquireAll do not defer to a set's
// place: those that keep taking one of its keys can still delay it. With
// telemetry, each key's attempt is observed as its
// node requests and its lock's hold; the call itself has no span and no
// acquisition count.
func (c *Client) AcquireAll(ctx context.Context, names []string, opts ...LockOption) (*Locks, error) {
	return c.acquireAll(ctx, names, false, opts)
}

// TryAcquireAll makes exactly one attempt to take the locks of every name
// in names together, as AcquireAll does, and returns at once: within the
// per-node timeout, twice when the keys granted by a failed attempt must
// be released. Its errors are those of AcquireAll.
func (c *Client) TryAcquireAll(ctx context.Context, names []string, opts ...LockOption) (*Locks, error) {
	return c.acquireAll(ctx, names, true, opts)
}

func (c *Client) acquireAll(ctx context.Context, names []string, once bool, opts []LockOption) (*Locks, error) {
	if err := c.checkCall(ctx); err != nil {
		return nil, err
	}
	m, err := c.multiRequest(ctx, names, opts)
	if err != nil {
		return nil, err
	}
	m.once = once
	c.underway.enter()
	defer c.underway.exit()
	var locks *Locks
	if once {
		locks, err = m.try()
	} else {
		locks, err = m.run()
	}
	if err == nil && c.closing() {
		locks, err = nil, c.releaseWonAtClose(ctx, fmt.Sprintf("the locks on %d keys", len(names)), locks.Release)
	}
	return locks, c.closedDuring(err)
}

// multiAcquisition is one AcquireAll or TryAcquireAll call.
type multiAcquisition struct {
	c    *Client
	ctx  context.Context
	keys []string // the keys on the wire, sorted by name
	cfg  lockConfig
	// once: TryAcquireAll, which does not wait, nor listen.
	once bool
	// listening is the keys whose release announcements wake the call (the
	// keys the last attempt was refused), wake their signals.
	listening     []string
	wake          *wait.Wakeup
	stopListening func()
	// places is the call's place in each key's queue, one per key, all
	// with the same since: when the call began (see run).
	places []queuePlace
}

// multiRequest checks the names and the options of one call, and returns
// the call, its keys sorted by name.
func (c *Client) multiRequest(ctx context.Context, names []string, opts []LockOption) (*multiAcquisition, error) {
	switch {
	case len(names) == 0:
		return nil, fmt.Errorf("%w: no name to lock", ErrInvalidKey)
	case len(names) > maxLockKeys:
		return nil, fmt.Errorf("%w: %d names to lock together, more than %d", ErrInvalidKey, len(names), maxLockKeys)
	}
	cfg := c.lockOptions(opts)
	if cfg.limited {
		return nil, fmt.Errorf("%w: WithLimit takes a permit of one name, not the locks of several", ErrInvalidOptions)
	}
	sorted := slices.Sorted(slices.Values(names))
	keys := make([]string, len(sorted))
	for i, name := range sorted {
		if i > 0 && name == sorted[i-1] {
			return nil, fmt.Errorf("%w: %s listed twice", ErrInvalidKey, quoteKey(name))
		}
		key, err := c.lockKey(name)
		if err != nil {
			return nil, err
		}
		keys[i] = key
	}
	if err := c.checkLockTTL(cfg.ttl); err != nil {
		return nil, err
	}
	if err := checkCallOwner(cfg.owner); err != nil {
		return nil, err
	}
	if err := c.checkLockDelay(cfg.delay, cfg.ttl); err != nil {
		return nil, err
	}
	cfg.ttl, cfg.delay = cfg.ttl.Truncate(time.Millisecond), cfg.delay.Truncate(time.Millisecond)
	return &multiAcquisition{c: c, ctx: ctx, keys: keys, cfg: cfg, wake: wait.NoWakeup, stopListening: func() {}}, nil
}

// run is the retry loop of AcquireAll (retryLoop): try every key, done if
// every one was granted, otherwise wait for the release of a refused key
// or a retry delay.
//
// An exclusive set waits in the nodes' queue of each of its keys, with one
// place in every queue: when the call began, so that the queues order the
// set waiters alike on every key and node. Its first attempt is a
// newcomer's, as a mutex's first is: it defers to the clients queued for a
// key, and queues only where it is refused, so that a set granted at once
// never shows itself as waiting. Each later attempt defers to the set
// waiters queued before it, so that the nodes keep a free key for the
// oldest of them, which takes its keys one by one as their holders release
// them, and then holds them all: it is never refused for long by waiters
// that came later, and, as it holds none of its keys while it waits, no
// two waiters wait for each other. The goroutines of this client whose
// sets share a key take turns (Client.sets), in the order they came: the
// client has one entry per key.
func (m *multiAcquisition) run() (*Locks, error) {
	defer func() { m.stopListening() }()
	if m.cfg.shared {
		return retryLoop(m.ctx, m.c.closed, m.cfg.retry, m.cfg.notify, shape[*Locks](m), false)
	}
	since := strconv.FormatInt(time.Now().UnixMicro(), 10)
	giveBack, taken := m.c.sets.Take(m.ctx, m.keys)
	if !taken {
		return nil, withCause(m.notAsked(), m.ctx)
	}
	defer giveBack()
	m.places = make([]queuePlace, len(m.keys))
	for i := range m.places {
		m.places[i] = queuePlace{since: since, set: true, newcomer: true}
	}
	locks, err := retryLoop(m.ctx, m.c.closed, m.cfg.retry, m.cfg.notify, shape[*Locks](m), false)
	if err != nil {
		m.c.giveUpQueues(m.ctx, m.c.id, m.keys, since, m.cfg.ttl)
	}
	return locks, err
}

// wait waits for the release of a key the last attempt was refused, or the
// retry delay.
func (m *multiAcquisition) wait(delay time.Duration) (live, named bool) {
	live, named, _ = waitForRelease(m.ctx, m.c.closed, m.wake, nil, nil, delay)
	return live, named
}

// keepPlace renews the waiting marks of the keys the call listens for, so
// that their releases are still announced, and not its places in their
// queues: the nodes keep a free key for the first set waiter in line, and
// one whose wake-up was lost would keep it from everyone until its next
// attempt (see keepplace.go).
func (m *multiAcquisition) keepPlace() {
	if m.wake != wait.NoWakeup && len(m.listening) > 0 {
		m.c.keepMarks(m.ctx, m.listening)
	}
}

// carrying is false: no release carries an attempt of several keys.
func (m *multiAcquisition) carrying() bool { return false }

// failed does nothing: try listens for the refused keys before it releases
// the granted ones.
func (m *multiAcquisition) failed() {}

// behind reports that, on a key of the set, the nodes queued the call
// behind others that the next releases name, while it listens for them:
// it cannot win before it is named (see queuePlace.behind).
func (m *multiAcquisition) behind() bool {
	if m.wake == wait.NoWakeup {
		return false
	}
	for _, p := range m.places {
		if p.behind {
			return true
		}
	}
	return false
}

// notAsked is the error of a call that gave up before its first attempt.
func (m *multiAcquisition) notAsked() error {
	return &QuorumError{Op: "acquire", Key: m.keys[0], Quorum: m.c.quorum, Nodes: m.c.unasked(), Err: ErrNotAcquired, Cause: ctxEnded(m.ctx)}
}

// try makes one attempt on every key at once, and returns the set when
// every key was granted. Otherwise it releases the keys that were granted,
// and returns the error of a refused key: one that failed for a reason no
// retry fixes if there is one (see failFast), so that the call fails fast.
func (m *multiAcquisition) try() (*Locks, error) {
	n := len(m.keys)
	locks := make([]*Lock, n)
	errs := make([]error, n)
	passed := m.wake.Passed()
	for i := range m.places {
		m.places[i].passed = passed
	}
	// Renewal starts once the set is held, not for keys about to be
	// released.
	forEach(n, func(i int) {
		if m.cfg.shared {
			locks[i], errs[i] = m.c.attemptShared(m.ctx, m.keys[i], m.cfg.ttl, m.cfg.delay, m.cfg.owner, false, nil)
		} else {
			locks[i], errs[i] = m.c.attempt(m.ctx, m.keys[i], m.cfg.ttl, m.cfg.delay, m.cfg.owner, false, m.place(i))
		}
	})
	for i := range m.places {
		m.places[i].newcomer = false
	}
	var refused []string
	for i, tryErr := range errs {
		if tryErr != nil {
			refused = append(refused, m.keys[i])
		}
	}
	if len(refused) == 0 {
		return m.held(locks), nil
	}
	err := decisiveError(errs)
	if !m.once {
		// Before the release below, whose announcements would otherwise
		// wake this very call.
		m.listen(refused)
	}
	for _, l := range locks {
		if l != nil {
			// Its release keeps the call's place in the key's queue.
			l.queuedSince = ""
		}
	}
	releaseGranted(m.ctx, locks)
	return nil, &detailed{fmt.Sprintf("redlock: %d of %d keys not acquired", len(refused), n), err}
}

// decisiveError returns the error of a set's attempt that best says why
// it failed: the first that no retry can fix, else the first of a key
// that some node found held by another holder (the conflict that keeps
// the set out, where another key may only have met a slow node), else the
// first.
func decisiveError(errs []error) error {
	var first, held error
	for _, err := range errs {
		switch {
		case err == nil:
		case failFast(err):
			return err
		case held == nil && heldOnANode(err):
			held = err
		case first == nil:
			first = err
		}
	}
	if held != nil {
		return held
	}
	return first
}

// place returns the call's place in the queue of its i-th key, or nil when
// it keeps none: TryAcquireAll, and a shared set.
func (m *multiAcquisition) place(i int) *queuePlace {
	if m.places == nil {
		return nil
	}
	return &m.places[i]
}

// held returns the set of locks, every one granted, renewing them if the
// call asked for it: until one of them ends (released, lost or expired),
// when the set is over and the others stop being renewed, to expire at
// their deadlines unless released first.
func (m *multiAcquisition) held(locks []*Lock) *Locks {
	if m.cfg.autoRenew {
		for _, l := range locks {
			l.startRenewal()
		}
		stopAll := func() {
			for _, l := range locks {
				l.stopRenewal()
			}
		}
		for _, l := range locks {
			context.AfterFunc(l.ownerContext(), stopAll)
		}
	}
	return &Locks{locks: locks}
}

// listen makes the release announcements of the keys refused, and of no
// others, wake the call: not those of the keys it was granted and is
// releasing.
func (m *multiAcquisition) listen(refused []string) {
	if slices.Equal(refused, m.listening) {
		return
	}
	m.stopListening()
	m.wake, m.stopListening = m.c.waker.ListenForAll(refused, false)
	m.listening = refused
}

// releaseGranted releases, all at once, the locks of a failed attempt that
// were granted (the others are nil). Their releases are announced, as any
// Release, so that clients waiting for those keys try again. A release that
// fails leaves its key until its TTL passes, as after a failed attempt.
func releaseGranted(ctx context.Context, locks []*Lock) {
	var granted []*Lock
	for _, l := range locks {
		if l != nil {
			granted = append(granted, l)
		}
	}
	forEach(len(granted), func(i int) { granted[i].Release(ctx) })
}

// forEach calls f(0) to f(n-1) at once, f(0) on the calling goroutine, and
// returns when they all have.
func forEach(n int, f func(i int)) {
	if n == 0 {
		return
	}
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Go(func() { f(i) })
	}
	f(0)
	wg.Wait()
}

// Locks returns the locks of the set, one per name, sorted by name. The
// slice is the caller's.
func (s *Locks) Locks() []*Lock { return slices.Clone(s.locks) }

// Until returns the earliest validity deadline among the locks: the set is
// held, at the latest, until then, unless it is extended.
func (s *Locks) Until() time.Time {
	until := s.locks[0].Until()
	for _, l := range s.locks[1:] {
		if u := l.Until(); u.Before(until) {
			until = u
		}
	}
	return until
}

// Extend extends every lock of the set at once, as Lock.Extend does (by
// ttl, or by the acquisition TTL when ttl is 0). It blocks for at most the
// per-node timeout. When some lock was not extended, the error says how
// many and wraps the failure of one: of a lock lost, when one was, so that
// errors.Is(err, ErrLockLost) tells that the set is lost; else of a lock
// expired (ErrLockExpired); otherwise the first in name order
// (ErrNotExtended, ErrReleased, ErrExtendLimit, ...).
// The locks that were extended stay extended: Until is the earliest
// deadline still. Once a lock of the set ended (see Err), the set is over:
// Extend extends none, and returns that lock's error.
func (s *Locks) Extend(ctx context.Context, ttl time.Duration) error {
	if ctx == nil {
		return errNilContext // each lock's Extend refuses a closed Client
	}
	if err := s.Err(); err != nil {
		return fmt.Errorf("redlock: the set is over, no key extended: %w", err)
	}
	errs := make([]error, len(s.locks))
	forEach(len(s.locks), func(i int) { errs[i] = s.locks[i].Extend(ctx, ttl) })
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
		}
	}
	if failed == 0 {
		return nil
	}
	return fmt.Errorf("redlock: %d of %d keys not extended: %w", failed, len(s.locks), firstEnded(errs))
}

// Release releases every lock of the set at once, as Lock.Release does,
// and returns their errors joined: errors.Is(err, ErrNotHeld) when a lock
// had expired (harmless: the others are released all the same), and
// ErrNotReleased when a lock's release did not reach a quorum, which a
// second Release tries again, for the locks not released yet. It fails
// with ErrReleased when every lock was released already. Like Lock.Release,
// it runs even when ctx has ended or is nil. Concurrent calls take turns:
// one releases the set, and the others then find it released.
func (s *Locks) Release(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background() // a release always runs
	}
	s.releasing.Lock()
	defer s.releasing.Unlock()
	var pending []*Lock
	for _, l := range s.locks {
		if !l.isReleased() {
			pending = append(pending, l)
		}
	}
	if len(pending) == 0 {
		return fmt.Errorf("%w: every one of %d keys", ErrReleased, len(s.locks))
	}
	errs := make([]error, len(pending))
	forEach(len(pending), func(i int) { errs[i] = pending[i].Release(ctx) })
	return errors.Join(errs...)
}

// Done returns a channel that is closed as soon as one lock of the set
// stops being held: released (Release closes it), lost or expired (see
// Lock.Done). Err then says why. As with Lock.Done, the channel a call
// returns after a lock ended is closed already. It starts no goroutine:
// the first call registers a callback on each lock's lost-lock signal.
func (s *Locks) Done() <-chan struct{} {
	s.watch.Do(func() {
		s.done = make(chan struct{})
		var closing sync.Once
		end := func() { closing.Do(func() { close(s.done) }) }
		for _, l := range s.locks {
			owner := l.ownerContext()
			if owner.Err() != nil {
				// AfterFunc would close it on a goroutine of its own, later.
				end()
				break
			}
			context.AfterFunc(owner, end)
		}
	})
	return s.done
}

// Err returns nil while every lock of the set is held; otherwise the error
// of a lock that ended (see Lock.Err): one wrapping ErrLockLost if a lock
// was lost, else one wrapping ErrLockExpired if a lock expired, else
// ErrReleased after Release. It does no I/O.
func (s *Locks) Err() error {
	errs := make([]error, len(s.locks))
	for i, l := range s.locks {
		errs[i] = l.Err()
	}
	return firstEnded(errs)
}

// firstEnded returns the first error of errs that wraps ErrLockLost, else
// the first that wraps ErrLockExpired, or else the first error; nil when
// there is none.
func firstEnded(errs []error) error {
	for _, verdict := range []error{ErrLockLost, ErrLockExpired} {
		if i := slices.IndexFunc(errs, func(err error) bool { return errors.Is(err, verdict) }); i >= 0 {
			return errs[i]
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// ownerContext returns the lock's lost-lock context (see watchLocked), armed
// if it was not: it is cancelled when the lock is released or lost.
func (l *Lock) ownerContext() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watchLocked()
	return l.ctx
}

// isReleased reports whether Release released the lock.
func (l *Lock) isReleased() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.released
}
