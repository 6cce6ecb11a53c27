package wait

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock/internal/nodes"
)

// Offer is the attempt of a goroutine waiting for its turn on a key,
// offered to go out with this client's release of the key's lock, so that
// the lock changes hands within one round trip. A release takes it (Take)
// or the goroutine withdraws it (Withdraw), whichever comes first.
type Offer interface {
	// Take claims the offer for a release, and reports whether it was
	// still offered.
	Take() bool
	// Withdraw takes the offer back, and reports whether no release had
	// taken it.
	Withdraw() bool
}

// Holder is a lock this client holds, acquired in an earlier turn: Err is
// nil while it is held, Until its validity deadline (renewals move it).
type Holder interface {
	Err() error
	Until() time.Time
}

// keyShards spreads the per-key state over independent mutexes so that
// goroutines locking different keys rarely wait on each other's bookkeeping.
const keyShards = 64

// Turns is what a Client's goroutines know about each key they lock:
//
//   - the turn: one goroutine at a time tries for a key, and the others
//     queue behind it, first come first served. Without it, goroutines of
//     one process that wait for the same lock would wake together and split
//     the nodes' votes so that none wins, and a goroutine releasing a lock
//     could take it straight back ahead of those that waited;
//   - the goroutine in TryAcquire that tries the key, whose attempt the
//     others calling TryAcquire meanwhile share (Client.tryAcquire), so
//     that they never split the votes among themselves;
//   - whether this client holds the key's lock, so that the next goroutine
//     waits for its release and offers its attempt to go out with it
//     (see Offer);
//   - the last release of the key that returned before every node had
//     answered (a release returns at a quorum), until those nodes have
//     answered. The next acquisition of the key waits for them on those
//     nodes, as a lock's release waits for its own acquisition's lagging
//     requests (see nodes.Lagging): over a connection pool the acquisition could
//     otherwise reach such a node before the release, find the old lock
//     there, and fail, though this client released it.
//
// A key's state exists while any of these holds.
type Turns struct {
	seed   maphash.Seed
	shards [keyShards]keyShard
	// holdings numbers the locks acquired here (see keyState.holding).
	holdings atomic.Uint64
}

type keyShard struct {
	mu   sync.Mutex
	keys map[string]*keyState
	// spare holds key states that went idle, for the next new key: a key
	// per cycle would otherwise cost a state per cycle.
	spare []*keyState
}

// maxSpare bounds a shard's spare key states.
const maxSpare = 8

// keyState is the state of one key.
type keyState struct {
	busy    bool // a goroutine has the Turn
	waiting []*waiter
	// heldHere: this client holds the lock, acquired in an earlier turn;
	// holding numbers that lock (from turns.holdings), so that the
	// release of an older lock of the key leaves it alone. freed is closed
	// when it is released; made when a goroutine's turn starts while it is
	// held, nil until then.
	heldHere bool
	holding  uint64
	freed    chan struct{}
	// holder is the lock held here, when the goroutine that acquired it
	// said (GiveBackHeld); nil otherwise.
	holder Holder
	// handoff is the attempt of the goroutine whose turn it is, offered to
	// go out with this client's release of the lock; nil when none is.
	handoff Offer
	// trailing are the last releases of the key whose requests to some
	// nodes may still be under way, newest first (see AddTrailing); nil
	// when none may be.
	trailing *nodes.Lagging
	// trying: a goroutine is in TryAcquire on the key, making the attempt
	// that the others calling TryAcquire meanwhile share; tried is where
	// it tells them how the attempt ended, made by the first of them.
	trying bool
	tried  *Try
}

// idle reports that the key's state holds nothing worth keeping.
func (k *keyState) idle() bool {
	return !k.busy && len(k.waiting) == 0 && !k.heldHere && k.trailing == nil && !k.trying
}

// freedLocked returns the channel closed when the lock held here is
// released, making it on first need; nil when the lock is not held here.
func (k *keyState) freedLocked() chan struct{} {
	if k.heldHere && k.freed == nil {
		k.freed = make(chan struct{})
	}
	return k.freed
}

// stateLocked returns key's state, made (or taken from the spare ones) when
// it has none.
func (s *keyShard) stateLocked(key string) *keyState {
	k, ok := s.keys[key]
	if ok {
		return k
	}
	if n := len(s.spare); n > 0 {
		k, s.spare = s.spare[n-1], s.spare[:n-1]
	} else {
		k = &keyState{}
	}
	s.keys[key] = k
	return k
}

// dropIfIdleLocked forgets key's state k when it holds nothing, keeping
// it as a spare.
func (s *keyShard) dropIfIdleLocked(key string, k *keyState) {
	if !k.idle() {
		return
	}
	delete(s.keys, key)
	if len(s.spare) < maxSpare {
		clear(k.waiting[:cap(k.waiting)])
		*k = keyState{waiting: k.waiting[:0]}
		s.spare = append(s.spare, k)
	}
}

// waiter is a goroutine queued for a turn.
type waiter struct {
	handed chan struct{} // closed when the Turn is the waiter's
	// offer is the waiter's attempt, to go out with this client's release
	// of the lock if its turn starts with the lock held here; may be nil.
	offer Offer
	// The state of the lock when the turn was handed over, set before
	// handed is closed: a release may follow at once, and take then still
	// reports that the offer was parked.
	heldHere bool
	freed    chan struct{}
	holder   Holder
}

// Turn is the outcome of take.
type Turn struct {
	Taken    bool // the caller has the turn and must give it back
	Queued   bool // the caller waited behind another goroutine
	HeldHere bool // this client holds the lock, acquired in an earlier turn
	// Freed is closed when the lock held here is released; nil unless
	// HeldHere.
	Freed <-chan struct{}
	// Holder is the lock held here, when known; nil unless HeldHere.
	Holder Holder
}

// NewTurns returns the turns of a client with no key.
func NewTurns() *Turns {
	w := &Turns{seed: maphash.MakeSeed()}
	for i := range w.shards {
		w.shards[i].keys = map[string]*keyState{}
	}
	return w
}

func (w *Turns) shard(key string) *keyShard {
	return &w.shards[maphash.String(w.seed, key)%keyShards]
}

// Take waits for the turn on key, or for ctx to end. The caller must call
// GiveBack when the result says the turn was taken. offer, when not nil, is
// the caller's attempt, which a release of this client may take with it
// once the caller's turn started with the lock held here; see Offer.
func (w *Turns) Take(ctx context.Context, key string, offer Offer) Turn {
	s := w.shard(key)
	s.mu.Lock()
	k := s.stateLocked(key)
	if !k.busy {
		// Nobody else waits: the lock may be held here.
		k.busy = true
		if offer != nil && k.heldHere {
			k.handoff = offer
		}
		tn := Turn{Taken: true, HeldHere: k.heldHere, Freed: k.freedLocked(), Holder: k.holder}
		s.mu.Unlock()
		return tn
	}
	wt := &waiter{handed: make(chan struct{}), offer: offer}
	k.waiting = append(k.waiting, wt)
	s.mu.Unlock()

	select {
	case <-wt.handed:
		return Turn{Taken: true, Queued: true, HeldHere: wt.heldHere, Freed: wt.freed, Holder: wt.holder}
	case <-ctx.Done():
	}
	return w.leave(s, key, k, wt)
}

// leave takes wt, whose context ended, out of the queue of key. A turn
// handed over meanwhile is passed on as it came, unless a release took the
// waiter's attempt with it: the waiter then has the turn and must see the
// attempt through.
func (w *Turns) leave(s *keyShard, key string, k *keyState, wt *waiter) Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, other := range k.waiting {
		if other == wt {
			k.waiting = append(k.waiting[:i:i], k.waiting[i+1:]...)
			return Turn{Queued: true}
		}
	}
	if wt.offer != nil && !wt.offer.Withdraw() {
		return Turn{Taken: true, Queued: true, HeldHere: true, Freed: wt.freed, Holder: wt.holder}
	}
	w.giveLocked(s, key, k, false)
	return Turn{Queued: true}
}

// GiveBack ends the caller's turn on key and hands it to the next in line,
// telling it whether the lock is held here: acquired in the caller's turn,
// or earlier and not released yet. When the caller acquired the lock, it
// returns the number of its holding, to pass to Released when the lock is
// released; 0 otherwise.
func (w *Turns) GiveBack(key string, acquired bool) (holding uint64) {
	return w.giveBack(key, acquired, nil)
}

// GiveBackHeld is GiveBack of a turn in which the caller acquired lock:
// the next in line learns which lock it waits for (Turn.Holder).
func (w *Turns) GiveBackHeld(key string, lock Holder) (holding uint64) {
	return w.giveBack(key, true, lock)
}

func (w *Turns) giveBack(key string, acquired bool, lock Holder) (holding uint64) {
	s := w.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.keys[key]
	if acquired {
		k.holder = lock
	}
	w.giveLocked(s, key, k, acquired)
	if acquired {
		return k.holding
	}
	return 0
}

// Released tells the goroutine whose turn started while this client held
// the lock on key, acquired as holding (from GiveBack), that the lock was
// released. A release of an earlier lock of the key, which handed it over
// to a newer one (see Offer), leaves the newer one's state alone.
func (w *Turns) Released(key string, holding uint64) {
	s := w.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.keys[key]
	if holding == 0 || k == nil || !k.heldHere || k.holding != holding {
		return
	}
	if k.freed != nil {
		close(k.freed)
	}
	k.heldHere, k.holding, k.freed, k.handoff, k.holder = false, 0, nil, nil, nil
	s.dropIfIdleLocked(key, k)
}

func (w *Turns) giveLocked(s *keyShard, key string, k *keyState, acquired bool) {
	if acquired {
		k.heldHere, k.holding, k.freed = true, w.holdings.Add(1), nil
	}
	k.handoff = nil
	if len(k.waiting) == 0 {
		k.busy = false
		s.dropIfIdleLocked(key, k)
		return
	}
	next := k.waiting[0]
	k.waiting = k.waiting[1:]
	if k.heldHere {
		k.handoff = next.offer
	}
	next.heldHere, next.freed = k.heldHere, k.freedLocked()
	if k.heldHere {
		next.holder = k.holder
	}
	close(next.handed)
}

// Busy reports whether a goroutine of this client has the turn on key or
// holds its lock. The answer may be stale at once.
func (w *Turns) Busy(key string) bool {
	s := w.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys[key]
	return ok && (k.busy || len(k.waiting) > 0 || k.heldHere)
}

// Queued returns how many goroutines wait for key's turn.
func (w *Turns) Queued(key string) int {
	s := w.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.keys[key]; ok {
		return len(k.waiting)
	}
	return 0
}

// TakeOffer returns the attempt offered to go out with this client's
// release of key, now the caller's to launch and submit; nil when none is.
func (w *Turns) TakeOffer(key string) Offer {
	s := w.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.keys[key]
	if k == nil || k.handoff == nil {
		return nil
	}
	h := k.handoff
	k.handoff = nil
	if !h.Take() {
		return nil
	}
	return h
}

// AddTrailing records the release of key whose requests to lag.nodes may
// still be under way; nil is a release that every node answered. It takes
// lag, made for it by the release's Flight.Lagging, and chains the key's
// earlier releases still under way behind it (see nodes.Lagging.After):
// the key's next requests wait for all of them. Each goes from the record
// once its nodes have all answered.
func (w *Turns) AddTrailing(key string, lag *nodes.Lagging) {
	if lag == nil {
		return
	}
	s := w.shard(key)
	s.mu.Lock()
	k := s.stateLocked(key)
	k.trailing = lag.After(k.trailing)
	if k.trailing == nil {
		s.dropIfIdleLocked(key, k)
	}
	s.mu.Unlock()
	lag.AfterLanding(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if k := s.keys[key]; k != nil && k.trailing != nil {
			if k.trailing = k.trailing.Pending(); k.trailing == nil {
				s.dropIfIdleLocked(key, k)
			}
		}
	})
}

// Trailing returns the nodes where the key's last releases may still be
// under way (see AddTrailing), or nil when none may be.
func (w *Turns) Trailing(key string) *nodes.Lagging {
	s := w.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := s.keys[key]; k != nil {
		return k.trailing
	}
	return nil
}

// Parked returns the offer parked for this client's release of key's lock,
// without taking it; nil when none is.
func (w *Turns) Parked(key string) Offer {
	s := w.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := s.keys[key]; k != nil {
		return k.handoff
	}
	return nil
}

// Len returns the number of keys whose state the turns keep: those with a
// turn taken, a waiter, a lock held here or a trailing release.
func (w *Turns) Len() int {
	n := 0
	for i := range w.shards {
		s := &w.shards[i]
		s.mu.Lock()
		n += len(s.keys)
		s.mu.Unlock()
	}
	return n
}

// Try is how the attempt of the goroutine of a client in TryAcquire on a
// key ended, for the goroutines of the same client that called TryAcquire
// on the key while it was under way (see StartTry).
type Try struct {
	done chan struct{}
	// Outcome is what EndTry's settle returned: set before Done closes.
	Outcome any
}

// Done is closed once the attempt ended and Outcome is set.
func (t *Try) Done() <-chan struct{} { return t.done }

// StartTry makes the caller the goroutine that tries key in TryAcquire,
// and returns nil; or, when another goroutine does already, the Try of its
// attempt to wait for. Only one of a client's goroutines tries a key at a
// time: each making an attempt of its own, they would split the nodes'
// votes among themselves. The caller that tries must call EndTry.
func (w *Turns) StartTry(key string) *Try {
	s := w.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.stateLocked(key)
	if !k.trying {
		k.trying = true
		return nil
	}
	if k.tried == nil {
		k.tried = &Try{done: make(chan struct{})}
	}
	return k.tried
}

// EndTry ends the caller's try of key, begun by StartTry, and tells the
// goroutines that waited for it how its attempt ended: what settle
// returns, called only when one waited.
func (w *Turns) EndTry(key string, settle func() any) {
	s := w.shard(key)
	s.mu.Lock()
	k := s.keys[key]
	t := k.tried
	k.trying, k.tried = false, nil
	s.dropIfIdleLocked(key, k)
	s.mu.Unlock()
	if t != nil {
		t.Outcome = settle()
		close(t.done)
	}
}
