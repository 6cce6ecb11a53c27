package redlock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/redlock-go/redlock/internal/telemetry"
	"github.com/redlock-go/redlock/internal/wait"
	"github.com/redlock-go/redlock/internal/wire"
)

// A semaphore of limit permits on a name is limit mutexes, its permits: the
// keys name:permit:1 to name:permit:limit (wire.PermitKey). Taking a permit is
// acquiring one of them by the Redlock algorithm, so each permit has at most
// one holder for the same reasons a mutex does, and the resource at most
// limit. A quorum of nodes counting holders instead could not bound them:
// with limit 2 on three nodes, three clients can each hold a majority of the
// nodes' counts while every node counts two.

// MaxLimit is the largest number of permits WithLimit accepts: taking a
// permit tries them one after the other while they are held.
const MaxLimit = 1024

// checkLimit refuses a limit out of range, a semaphore taken shared, and a
// semaphore name whose permit keys would be too long.
func (c *Client) checkLimit(name string, limit int, shared bool) error {
	if limit < 1 || limit > MaxLimit {
		return fmt.Errorf("%w: limit %d is outside 1..%d", ErrInvalidOptions, limit, MaxLimit)
	}
	if shared {
		return fmt.Errorf("%w: WithLimit and WithShared together: a permit is a mutex", ErrInvalidOptions)
	}
	_, err := c.lockKey(wire.PermitKey(name, limit))
	return err
}

// permits is one call taking a permit of a semaphore.
type permits struct {
	c    *Client
	ctx  context.Context
	key  string // the semaphore's key on the wire
	cfg  lockConfig
	call *telemetry.Call
	// heldHere are the locks of this client that held permits when the
	// last try skipped them: the next wait waits for the end of these very
	// locks, so that one that ended since the try wakes it at once.
	heldHere []*Lock
	// heldNumbers are their permits' indexes, heldHere[i]'s at i.
	heldNumbers []int
	// offered is the next attempt, offered to the releases of heldHere
	// (see offer); nil when none is.
	offered *permitHandoff
	// places is the call's place in each permit's queue on the nodes,
	// permit i+1's at i, all with one since: when the call's first try
	// began; nil for a call that does not wait (TryAcquire).
	places []queuePlace
	// waits: the call waits for a permit (Acquire), and queues for one.
	waits bool
	// woken, when set, returns the signals of the releases that wake the
	// call: the release channel of the permit whose release last woke it
	// (From), and the client that let its turn pass before (Passed).
	woken func() *wait.Wakeup
	// claimed are the permits the call claimed (see permitClaims), in the
	// order it did; a call that does not wait claims none. claimedElsewhere
	// are those the last try skipped as another call here claimed them,
	// their indexes in claimedNumbers: the call offers its attempt to
	// their releases too, as that call may win them.
	claimed          []string
	claimedElsewhere []string
	claimedNumbers   []int
	// rank orders the call's offers among those of this client's calls
	// (Lanes.Take's ticket).
	rank uint64
	// claimsEnded and handoffsFailed are the generations of
	// permitClaims.ended and Client.handoffsFailed as the last try began;
	// skipped: that try skipped a permit another call here claimed.
	claimsEnded, handoffsFailed uint64
	skipped                     bool
}

// acquirePermit takes a permit of the semaphore key: once, or until ctx
// ends. This client's goroutines waiting for a permit of one semaphore
// take lanes, up to twice limit at once, first come first served
// (wait.Lanes), and each asks only for the permits no other one claimed
// (permitClaims): while the limit's worth of them hold the permits, as
// many more wait with their attempts offered to the releases.
//
// A call that waits queues on the nodes as a set waiter does (see
// multiAcquisition.run): in the queue of every permit, with one place,
// when its first try began, so that the queues order the waiters alike on
// every permit and node, and a node keeps a free permit for the first of
// them. Its first try defers only to the clients queued before it, as a
// newcomer to a mutex does, and costs an uncontended call one EXISTS. Once
// it holds a permit, it leaves the queues of the other permits it asked
// for, passing its turn on there; its release leaves the queue of its own.
func (c *Client) acquirePermit(ctx context.Context, key string, cfg lockConfig, once bool, call *telemetry.Call) (*Lock, error) {
	p := &permits{c: c, ctx: ctx, key: key, cfg: cfg, call: call, waits: !once}
	r := repeated{c: c, ctx: ctx, cfg: cfg, key: key, lanes: 2 * cfg.limit, keys: p.listenKeys, attempt: p.tryAll,
		freed: p.freed, tookLane: func(ticket uint64) { p.rank = ticket }, keep: func() { c.keepMarks(ctx, p.listenKeys()) }}
	if !once {
		r.behindOthers = p.behind
		r.carrier = p
		p.woken = func() *wait.Wakeup { return r.wake }
	}
	lock, err := r.acquire(once)
	if err != nil && p.places != nil {
		c.giveUpQueues(ctx, c.id, p.queuedKeys(-1), p.places[0].since, cfg.ttl)
	}
	c.permitClaims.release(p, p.claimed)
	return lock, err
}

// queue gives the call its places in the permits' queues, at its first
// try: newcomers to each, with one since.
func (p *permits) queue() {
	since := strconv.FormatInt(time.Now().UnixMicro(), 10)
	p.places = make([]queuePlace, p.cfg.limit)
	for i := range p.places {
		p.places[i] = queuePlace{since: since, set: true, newcomer: true}
	}
}

// granted ends the call's wait for a permit after its try won permit i+1:
// it leaves, in the background, the queues of the other permits its tries
// asked for. A call woken by a release, that took the permit released, asked
// for no other, and sends nothing more.
func (p *permits) granted(i int) {
	others := p.queuedKeys(i)
	if len(others) == 0 {
		return
	}
	go p.c.leaveQueues(p.ctx, p.c.id, others, p.places[i].since, p.cfg.ttl)
}

// queuedKeys returns the keys of the permits whose queues the call's tries
// may have entered, but permit except+1's.
func (p *permits) queuedKeys(except int) []string {
	var keys []string
	for i, place := range p.places {
		if place.queued && i != except {
			keys = append(keys, wire.PermitKey(p.key, i+1))
		}
	}
	return keys
}

// behind reports that the nodes queued the call, on every permit its last
// try asked for, behind clients that the next releases name.
func (p *permits) behind() bool {
	asked := false
	for _, place := range p.places {
		if place.asked {
			if !place.behind {
				return false
			}
			asked = true
		}
	}
	return asked
}

// listenKeys returns the keys of the permits whose releases the call
// listens for: all but those another call here claimed, whose releases
// wake that call.
func (p *permits) listenKeys() []string {
	keys := make([]string, 0, p.cfg.limit)
	for i := range p.cfg.limit {
		key := wire.PermitKey(p.key, i+1)
		if p.c.permitClaims.freeFor(key, p) {
			keys = append(keys, key)
		}
	}
	return keys
}

// claim claims the permit key for the call, and reports whether it is the
// call's to ask for: a call that does not wait (TryAcquire) claims nothing
// and asks for every permit.
func (p *permits) claim(key string) bool {
	if !p.waits {
		return true
	}
	for _, k := range p.claimed {
		if k == key {
			return true
		}
	}
	if !p.c.permitClaims.claim(key, p) {
		p.skipped = true
		p.claimedElsewhere = append(p.claimedElsewhere, key)
		return false
	}
	p.claimed = append(p.claimed, key)
	return true
}

// tryAll makes one attempt on each permit in turn, from a random one on, so
// that clients spread over the permits, until one is granted. It skips the
// permits this client holds, and stops at a failure that does not show the
// permit held by another client: the nodes, not the permits, are what
// failed, and would fail the next attempt too.
func (p *permits) tryAll() (*Lock, error) {
	if p.ctx.Err() != nil {
		return nil, p.c.notAsked(p.key, p.ctx)
	}
	limit := p.cfg.limit
	first := p.firstToTry()
	var err error
	p.heldHere, p.heldNumbers = p.heldHere[:0], p.heldNumbers[:0]
	p.claimedElsewhere, p.claimedNumbers = p.claimedElsewhere[:0], p.claimedNumbers[:0]
	p.startTry()
	defer p.endTry()
	for i := range limit {
		n := (first + i) % limit
		key := wire.PermitKey(p.key, n+1)
		if l := p.c.permits.lock(key); l != nil {
			p.heldHere, p.heldNumbers = append(p.heldHere, l), append(p.heldNumbers, n)
			continue
		}
		if !p.claim(key) {
			p.claimedNumbers = append(p.claimedNumbers, n) // another call of this client asks for it
			continue
		}
		lock, tryErr := p.c.attempt(p.ctx, key, p.cfg.ttl, p.cfg.delay, p.cfg.owner, p.cfg.autoRenew, p.place(n))
		noteAttempt(p.call, lock, tryErr)
		if tryErr == nil {
			p.c.permits.add(lock)
			if p.places != nil {
				p.granted(n)
			}
			return lock, nil
		}
		err = tryErr
		if !heldElsewhere(err) || p.ctx.Err() != nil {
			return nil, err
		}
	}
	by := ""
	if err == nil { // every permit is held here, or asked for by another call here
		err = &QuorumError{Op: "acquire", Key: p.key, Quorum: p.c.quorum, Nodes: p.c.unasked(), Err: ErrNotAcquired}
		by = " by this client"
		if p.skipped {
			by = " or asked for by this client"
		}
	}
	if limit == 1 {
		return nil, &detailed{"redlock: the one permit of " + quoteKey(p.key) + " is held" + by, err}
	}
	return nil, &detailed{fmt.Sprintf("redlock: all %d permits of %s are held%s", limit, quoteKey(p.key), by), err}
}

// firstToTry returns the index of the permit a try asks for first: the
// one whose release woke the call, for which the nodes named it, or a
// random one, so that clients spread over the permits.
func (p *permits) firstToTry() int {
	if p.woken != nil {
		channel := p.woken().From()
		if n, ok := wire.PermitNumber(channel); ok && n <= p.cfg.limit {
			return n - 1
		}
	}
	return rand.IntN(p.cfg.limit)
}

// place returns the call's place in permit n+1's queue, marked as asked
// by the try under way, or nil for a call that does not wait.
func (p *permits) place(n int) *queuePlace {
	if p.places == nil {
		return nil
	}
	p.places[n].asked, p.places[n].queued = true, true
	return &p.places[n]
}

// startTry gives a waiting call its places in the permits' queues at its
// first try, and marks none as asked by this try yet; the try does not
// defer to a client that let its turn pass (see wait.Wakeup.Passed).
func (p *permits) startTry() {
	if p.places == nil && p.waits {
		p.queue()
	}
	if p.waits {
		p.claimsEnded, p.handoffsFailed = p.c.permitClaims.ended.generation(), p.c.handoffsFailed.generation()
		p.skipped = false
	}
	passed := ""
	if p.woken != nil {
		passed = p.woken().Passed()
	}
	for i := range p.places {
		p.places[i].asked, p.places[i].passed = false, passed
	}
}

// endTry ends a try: the call is no newcomer to the permits' queues any
// more.
func (p *permits) endTry() {
	for i := range p.places {
		p.places[i].newcomer = false
	}
}

// freed returns a channel closed once one of the permits that the last try
// skipped, as this client held them, is released or lost without its
// release carrying another call's attempt, or an attempt that a release
// carried failed, or, when it skipped a permit another call claimed, once
// a claim ends: at once if one did since the try began. It also returns
// the function that stops watching them; nil when there is nothing to
// watch. Not the permits held here now: the nodes may announce a release,
// and wake this call to try, before the releasing goroutine has seen its
// quorum and ended its lock, so that the try skips a permit whose lock
// ends before the wait starts. A release that carried another call's
// attempt hands the permit to that call: the others wait on.
func (p *permits) freed() (<-chan struct{}, func()) {
	if !p.waits {
		return anyEnded(p.heldHere)
	}
	if len(p.heldHere) == 0 && !p.skipped {
		return nil, func() {}
	}
	ch := make(chan struct{})
	var once sync.Once
	wake := func() { once.Do(func() { close(ch) }) }
	stops := make([]func() bool, 0, len(p.heldHere))
	for _, l := range p.heldHere {
		stops = append(stops, context.AfterFunc(l.ownerContext(), func() {
			if !l.wasHandedOff() {
				wake()
			}
		}))
	}
	// A carried attempt that failed may have freed a permit held here,
	// or one another call claimed and won since.
	stopFailed, stopEnded := p.c.handoffsFailed.watch(p.handoffsFailed, 0, wake), func() {}
	if p.skipped {
		stopEnded = p.c.permitClaims.ended.watch(p.claimsEnded, p.rank, wake)
	}
	return ch, func() {
		stopFailed()
		stopEnded()
		for _, stop := range stops {
			stop()
		}
	}
}

// heldElsewhere reports whether a failed acquisition found the key held by
// another token on some node.
func heldElsewhere(err error) bool {
	qe := quorumError(err)
	if qe == nil {
		return false
	}
	for _, r := range qe.Nodes {
		if r.Outcome == OutcomeHeld {
			return true
		}
	}
	return false
}

// localPermits are the permits this client's goroutines hold, by key on the
// wire: trying one of them would be a wasted round trip, and the release of
// one is a wake-up that needs no announcement. A lock that ended is
// forgotten when next looked at, or swept once the map has doubled.
type localPermits struct {
	mu    sync.Mutex
	held  map[string]*Lock
	sweep int // the size past which add sweeps ended locks out
}

// add records a permit acquired here.
func (lp *localPermits) add(l *Lock) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if lp.held == nil {
		lp.held = map[string]*Lock{}
	}
	if len(lp.held) >= lp.sweep {
		for key, held := range lp.held {
			if held.Err() != nil && !held.wasHandedOff() { // see lock
				delete(lp.held, key)
			}
		}
		lp.sweep = 2*len(lp.held) + 64
	}
	lp.held[l.key] = l
}

// lock returns the lock of this client that holds the permit key, or nil.
// A lock whose release carried the attempt of another call here (see
// permitHandoff) still counts until that attempt is in (add, or forget):
// the permit is on its way to that call, and the other calls wait for its
// next release instead of asking the nodes for it.
func (lp *localPermits) lock(key string) *Lock {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	l := lp.held[key]
	if l != nil && l.Err() != nil && !l.wasHandedOff() {
		delete(lp.held, key)
		return nil
	}
	return l
}

// forget drops the permit key once the attempt that its release carried
// failed, unless another lock holds it since: the lock whose release
// carried it may not have ended yet.
func (lp *localPermits) forget(key string) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if l := lp.held[key]; l != nil && l.wasHandedOff() {
		delete(lp.held, key)
	}
}

// anyEnded returns a channel closed once one of locks is released or lost,
// at once if one already is, and the function that stops watching them;
// nil when there are none.
func anyEnded(locks []*Lock) (<-chan struct{}, func()) {
	if len(locks) == 0 {
		return nil, func() {}
	}
	ch := make(chan struct{})
	var once sync.Once
	stops := make([]func() bool, len(locks))
	for i, l := range locks {
		stops[i] = context.AfterFunc(l.ownerContext(), func() { once.Do(func() { close(ch) }) })
	}
	return ch, func() {
		for _, stop := range stops {
			stop()
		}
	}
}
