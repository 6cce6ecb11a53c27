// Package wait holds this process's side of waiting for a lock: the turns
// of a client's goroutines on each key (waiters), the attempt a waiting
// goroutine offers to go out with the client's own release (Offer), and the
// release announcements that wake waiters (Waker). It decides who of this
// process tries next, and when; the nodes' queues decide among processes.
package wait

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock/internal/wire"
)

// Wake-up timing.
const (
	// listenRetryDelay paces reconnection of a node's subscription after it
	// failed: waiters fall back to their retry delays meanwhile, so a slow
	// reconnect costs latency, never correctness.
	listenRetryDelay = 500 * time.Millisecond
	// subscriptionLinger keeps a key's channel subscribed this long after its
	// last waiter left: a contended key sees waiters come and go at every
	// handoff, and a fresh subscription can miss the very release it waits
	// for. It costs the nodes one idle subscription per recently awaited key.
	subscriptionLinger = 5 * time.Second
)

// Listener is a node's connection that can hold a pub/sub connection: the
// root package's Conn, when it has the method, as both adapters do.
type Listener interface {
	Listen(ctx context.Context, subscribe, unsubscribe <-chan string, onMessage func(channel, payload string)) error
}

// Waker wakes waiting Acquire calls when a lock they wait for is released.
// Each node that implements Listener gets one Listen call, started on first
// need (one subscription connection, or one per master of a Redis Cluster);
// a channel is subscribed while a waiter waits on it. Channels are named
// as the release script names them (layout.releaseChannel): on a Redis
// Cluster node they are shard channels, which the node's Listen subscribes
// to by SSUBSCRIBE.
// A release wakes one waiter of this Client, the longest waiting, once a
// quorum of nodes announced it, so that local waiters do not split the nodes'
// votes between them, nor race ahead of the nodes still holding the lock;
// readers, who do not split votes among themselves, all wake, and do not
// count as that one (see signalFirstLocked).
//
// Across clients, each announcement names the first two clients in the key's
// queue on its node (see wire.QueueKeys), and only they wake, the second
// one a node timeout after the first (see deliver): a crowd of processes
// waiting for one key would otherwise all try at once at every release and
// split the nodes' votes so that none wins. Two, so that a client that left
// without taking the key costs no wake-up; on five nodes, two contenders
// cannot both fall short of a majority. The announcement goes to each named
// client's own channel for the key (namedChannel), to which only that
// client subscribes, so that a release costs a node two messages however
// many clients wait, and none of the others is woken to read it; they try
// at their retry delays. A release that names nobody (no client is queued)
// is announced on the key's channel and wakes every client's first waiter,
// as clients that never were refused are not in the queue.
type Waker struct {
	listeners []Listener
	keys      wire.Layout // names the release channels, as the release script does
	quorum    int         // announcements of one release that wake a waiter
	id        string      // this client's id in the queues
	// behind returns how long this client, named second by a release,
	// lets the first named try before it wakes its own waiter (see
	// deliver).
	behind func() time.Duration

	mu     sync.Mutex
	queues map[string][]*Wakeup    // key's channel → waiters, oldest first
	idle   map[string]*time.Timer  // subscribed channels with no waiter
	heard  map[string]announcement // channel → the latest release heard on it
	// confirmed records, per key channel, which nodes confirmed its
	// subscription since it was last sent (see confirmLocked).
	confirmed map[string][]bool
	pending   []*pendingSubs // per node
	changes   uint64         // numbers the subscription changes, in order
	started   bool
	ctx       context.Context
	stop      context.CancelFunc
}

// Now returns the channel on which the waiter is told to try now; nil for
// NoWakeup, which never tells.
func (wake *Wakeup) Now() <-chan struct{} { return wake.now }

// Wakeup is a waiter's signal to try for the key now; it holds one signal.
type Wakeup struct {
	now chan struct{}
	// everyone: the waiter is signalled by every release it hears, not
	// only when it is the oldest: a reader of a read-write lock, which
	// does not split votes with the other readers.
	everyone bool
	// from is the release channel of the latest signal.
	from atomic.Pointer[string]
	// second: the waiter's last attempt was queued behind another client,
	// whom releases name first; a subscription's confirmation wakes it
	// only a node timeout later (see confirmLocked).
	second atomic.Bool
	// confirmed is the pending wake-up of a second waiter by a
	// confirmation; guarded by the Waker's mu.
	confirmed *time.Timer
	// passed is the client that a release named first when it named this
	// one second, if the latest signal came a node timeout after that
	// release (see deliver); nil otherwise.
	passed atomic.Pointer[string]
}

// SetSecond tells whether the waiter's last attempt was queued behind
// another client on the nodes that refused it (see confirmLocked).
func (wake *Wakeup) SetSecond(second bool) {
	if wake != NoWakeup {
		wake.second.Store(second)
	}
}

// From returns the key's release channel that the latest signal came
// from, or "" before any: a waiter for one of several keys tries that one
// first.
func (wake *Wakeup) From() string {
	if p := wake.from.Load(); p != nil {
		return *p
	}
	return ""
}

// Passed returns, once, the client that let its turn pass: the one named
// first by the release that named this client second, when the latest
// signal came a node timeout after that release and nothing woke the
// waiter meanwhile. "" otherwise. A waiter for a set of keys or a permit
// need not defer to that client on its next attempt (see
// lua/queued_acquire.lua, mode 5): most likely it died while first in line.
func (wake *Wakeup) Passed() string {
	if p := wake.passed.Swap(nil); p != nil {
		return *p
	}
	return ""
}

// newWakeup returns the signals of a new waiter.
func newWakeup() *Wakeup {
	return &Wakeup{now: make(chan struct{}, 1)}
}

// NoWakeup is the signals of a waiter that does not listen: they never come.
var NoWakeup = &Wakeup{}

// announcement counts the nodes that announced one release (by its token).
type announcement struct {
	token string
	nodes int
	woken bool // this release signalled a waiter here already
	// later wakes the waiter once the first client the release named had
	// its turn to try, when it named this client second only.
	later *time.Timer
}

type subscription struct {
	channel string
	add     bool
}

// pendingSubs is what one node's listen goroutine is yet to send: the
// latest change asked of each channel, numbered in the order they were
// asked (see Waker.changes). Changes of a channel coalesce: a subscription
// and its end that the goroutine has not sent yet cost the node nothing,
// and none is ever dropped. Before, a queue of 256 dropped what did not
// fit: the waiters of a dropped subscription polled, and a dropped end
// left its channel subscribed for the life of the connection (77 channels
// 8 s after a waiter for a semaphore of 1,024 permits was served, and more
// after every burst of hundreds of waiters). Guarded by the Waker's mu.
type pendingSubs struct {
	changes map[string]pendingSub
	ready   chan struct{} // holds a token while changes has any
}

// pendingSub is the latest change asked of a channel, and its number.
type pendingSub struct {
	add bool
	seq uint64
}

// NewWaker returns the Waker of a client whose nodes that can notify are
// ns, whose keys are laid out as keys says, and whose id in the nodes'
// queues is id; nil when ns is empty. quorum announcements of a release
// that name nobody wake a waiter. A release that names the client second
// wakes its waiter behind() later (the client's node timeout as it stands:
// the longest the first named client's attempt takes).
func NewWaker(ns []Listener, quorum int, id string, keys wire.Layout, behind func() time.Duration) *Waker {
	if len(ns) == 0 {
		return nil
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Waker{listeners: ns, keys: keys, quorum: min(quorum, len(ns)), id: id, behind: behind, queues: map[string][]*Wakeup{},
		idle: map[string]*time.Timer{}, heard: map[string]announcement{}, confirmed: map[string][]bool{}, ctx: ctx, stop: stop}
}

// registerAs queues wake, a waiter's signals, on channel: one waiter may
// listen on several channels.
func (w *Waker) registerAs(channel string, wake *Wakeup) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.started {
		w.startLocked()
	}
	q := w.queues[channel]
	if len(q) == 0 {
		if t, subscribed := w.idle[channel]; subscribed {
			t.Stop()
			delete(w.idle, channel)
		} else {
			// The named channel first: a node serves one connection's
			// subscriptions in order, so that once the key's channel is
			// subscribed, the releases that name this client are heard too.
			w.sendLocked(subscription{channel: w.namedChannel(channel), add: true})
			w.sendLocked(subscription{channel: channel, add: true})
			w.confirmed[channel] = make([]bool, len(w.listeners))
		}
	}
	w.queues[channel] = append(q, wake)
}

// unregister removes a waiter that stopped waiting, woken or not.
func (w *Waker) unregister(channel string, wake *Wakeup) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wake.confirmed != nil {
		wake.confirmed.Stop()
		wake.confirmed = nil
	}
	q := w.queues[channel]
	for i, c := range q {
		if c == wake {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(w.queues, channel)
		delete(w.heard, channel)
		var t *time.Timer
		t = time.AfterFunc(subscriptionLinger, func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.idle[channel] == t {
				delete(w.idle, channel)
				delete(w.confirmed, channel)
				w.sendLocked(subscription{channel: channel})
				w.sendLocked(subscription{channel: w.namedChannel(channel)})
			}
		})
		w.idle[channel] = t
		return
	}
	w.queues[channel] = q
	if from := wake.From(); from != "" && from != channel {
		return // a wake-up it holds came from another channel: passed on there
	}
	select {
	case <-wake.now:
		// It was woken but leaves without using the wake-up: pass it on.
		w.signalFirstLocked(channel)
	default:
	}
}

// namedChannel returns the channel on which a release of the key announced
// on channel names this client to try (see lua/release.lua): channel, a
// space and the client's id. A key whose name ends in a space and another
// client's id shares a name with that client's channel for a shorter key,
// which costs either at most a wake-up for nothing.
func (w *Waker) namedChannel(channel string) string {
	return channel + " " + w.id
}

// deliver counts a node's announcement of a release: the release's token,
// then the clients it names, each after a space (see lua/release.lua), on
// the key's channel when it names nobody, or on this client's named
// channel for the key. It wakes the oldest waiter at the first node that
// named this client, or once a quorum of nodes announced the release
// naming nobody. Not a quorum of named announcements: the nodes' queues
// may differ (a refused attempt that missed a node's deadline did not
// queue the client there), so that a client next in line on most nodes may
// be named by fewer than a quorum, while waiting for every node's release
// would leave the key idle; trying on the first one rarely meets a node
// still holding the key, as the releases left before the announcement,
// and a failed try is retried within splitRetryMax.
// A client that a release names second wakes its waiter w.behind() later,
// unless another node names it first meanwhile: the first named, woken at
// once, has tried by then, and takes the key in its turn instead of racing
// the one behind it, which takes it only if the first did not try (its
// wake-up was lost, or it stopped waiting).
func (w *Waker) deliver(node int, channel, message string) {
	token, names, _ := strings.Cut(message, " ")
	w.mu.Lock()
	defer w.mu.Unlock()
	if message == "" {
		w.confirmLocked(node, channel)
		return
	}
	_, waiting := w.queues[channel]
	named := false
	if !waiting {
		keyChannel, ok := strings.CutSuffix(channel, " "+w.id)
		if _, waiting = w.queues[keyChannel]; !ok || !waiting {
			return
		}
		channel, named = keyChannel, true
	}
	a := w.heard[channel]
	if a.token != token {
		a = announcement{token: token}
	}
	a.nodes++
	switch {
	case a.woken || !named && a.nodes < w.quorum:
	case named && w.behind() > 0 && !w.namedFirst(names):
		if a.later == nil {
			first, _, _ := strings.Cut(names, " ")
			a.later = time.AfterFunc(w.behind(), func() { w.wakeLater(channel, token, first) })
		}
	default:
		a.woken = true
		if a.later != nil {
			a.later.Stop()
		}
		w.signalFirstLocked(channel)
	}
	w.heard[channel] = a
}

// namedFirst reports whether names, a release's named clients, names
// this client first: by its id, or by one of its readers' entries
// (wire.ReaderEntry).
func (w *Waker) namedFirst(names string) bool {
	first, _, _ := strings.Cut(names, " ")
	return wire.EntryClient(first) == w.id
}

// wakeLater wakes the waiter on channel for the release whose token is
// token, which named this client second and first the client first,
// unless it woke it already: first had a node timeout to try, and let its
// turn pass (see Wakeup.Passed).
func (w *Waker) wakeLater(channel, token, first string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if a, ok := w.heard[channel]; ok && a.token == token && !a.woken {
		a.woken = true
		w.heard[channel] = a
		w.signalLocked(channel, false, first)
	}
}

// confirmLocked records node's confirmation of a subscription to channel
// (an empty message, see Listener). A subscription takes a round trip or
// more to be up, and a release announced before it is not heard: the
// waiters that registered meanwhile, whose attempt failed before that
// release, would sleep through it until their retry delay. So once a
// quorum of nodes confirmed a new subscription to a key's channel, its
// waiters are told to try now, as by a release that names nobody: from
// then on, every release that can let an attempt succeed is announced by
// a quorum of nodes that they hear, or by one that names this client.
// A node that confirms again subscribed again after its connection failed
// (see listen): a release it announced meanwhile went unheard, and may be
// the one that frees the key, so the waiters are told to try again then.
// The named channel is subscribed before the key's on each node, which
// serves a connection's commands in order: its confirmation says nothing
// more.
// A waiter whose last attempt the nodes queued behind another client
// (Wakeup.SetSecond) is told w.behind() later, unless a release wakes it
// first: the client ahead, whom releases name first, takes the key in its
// turn instead of racing an attempt made for a release that most likely
// never was (that client has yet to take the key and let it go).
func (w *Waker) confirmLocked(node int, channel string) {
	nodes, sent := w.confirmed[channel]
	if !sent || node >= len(nodes) {
		return // the named channel, or one no longer awaited
	}
	if nodes[node] {
		w.signalLocked(channel, true, "") // subscribed again
		return
	}
	nodes[node] = true
	if n := countTrue(nodes); n == w.quorum {
		w.signalLocked(channel, true, "")
	}
}

// countTrue counts the true values of bs.
func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// signalFirstLocked tells the oldest waiter on channel that does not hear
// every release, and every waiter that does, to try now: a writer waiting
// behind this client's readers is woken too.
func (w *Waker) signalFirstLocked(channel string) { w.signalLocked(channel, false, "") }

// signalLocked is signalFirstLocked; for a subscription's confirmation
// (confirmed), a second waiter is told w.behind() later (see confirmLocked).
// passed, when not "", is the client that let its turn pass before this
// signal (see wakeLater).
func (w *Waker) signalLocked(channel string, confirmed bool, passed string) {
	first := true
	for _, wake := range w.queues[channel] {
		if !wake.everyone && !first {
			continue
		}
		first = first && wake.everyone
		wake.from.Store(&channel)
		if wake.confirmed != nil {
			wake.confirmed.Stop()
			wake.confirmed = nil
		}
		if passed != "" {
			wake.passed.Store(&passed)
		} else {
			wake.passed.Store(nil)
		}
		if confirmed && wake.second.Load() && w.behind() > 0 {
			wake.confirmed = time.AfterFunc(w.behind(), wake.signal)
			continue
		}
		wake.signal()
	}
}

// signal tells the waiter to try now.
func (wake *Wakeup) signal() {
	select {
	case wake.now <- struct{}{}:
	default:
	}
}

func (w *Waker) startLocked() {
	w.started = true
	w.pending = make([]*pendingSubs, len(w.listeners))
	for i, l := range w.listeners {
		w.pending[i] = &pendingSubs{changes: map[string]pendingSub{}, ready: make(chan struct{}, 1)}
		go w.listen(i, l, w.pending[i])
	}
}

// sendLocked asks every node's listen goroutine to make the change s.
func (w *Waker) sendLocked(s subscription) {
	w.changes++
	for _, p := range w.pending {
		p.changes[s.channel] = pendingSub{add: s.add, seq: w.changes}
		select {
		case p.ready <- struct{}{}:
		default: // already told
		}
	}
}

// takePending returns the changes p holds, in the order they were last
// asked (a client's channel for a key is subscribed before the key's
// channel: see registerAs), and empties it.
func (w *Waker) takePending(p *pendingSubs) []subscription {
	w.mu.Lock()
	changes := p.changes
	p.changes = map[string]pendingSub{}
	w.mu.Unlock()
	out := make([]subscription, 0, len(changes))
	for ch, c := range changes {
		out = append(out, subscription{channel: ch, add: c.add})
	}
	slices.SortFunc(out, func(a, b subscription) int { return cmp.Compare(changes[a.channel].seq, changes[b.channel].seq) })
	return out
}

// listen keeps one node's subscription connection up while the client is
// open: after Listen returned (a failed connection, or a subscription that
// a Redis Cluster ended as its slot moved), it calls it again after
// listenRetryDelay and subscribes again the channels that are still
// subscribed here, those with waiters and those lingering.
func (w *Waker) listen(node int, l Listener, p *pendingSubs) {
	deliver := func(channel, message string) { w.deliver(node, channel, message) }
	channels := map[string]bool{}
	for w.ctx.Err() == nil {
		sub, unsub := make(chan string), make(chan string)
		ctx, cancel := context.WithCancel(w.ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			l.Listen(ctx, sub, unsub, deliver)
		}()
		forward := func(s subscription) bool {
			to := unsub
			if s.add {
				to = sub
			}
			select {
			case to <- s.channel:
				return true
			case <-done:
				return false
			}
		}
		alive := true
		for ch := range channels {
			if alive = forward(subscription{channel: ch, add: true}); !alive {
				break
			}
		}
		for alive {
			select {
			case <-p.ready:
				alive = w.apply(w.takePending(p), channels, forward)
			case <-done:
				alive = false
			}
		}
		cancel()
		<-done
		Sleep(w.ctx, listenRetryDelay)
	}
}

// apply makes the changes that differ from channels, the node's
// subscriptions, by forward, and records every one in channels; it returns
// false once forward fails (the connection ended), when the next one
// subscribes channels afresh.
func (w *Waker) apply(changes []subscription, channels map[string]bool, forward func(subscription) bool) bool {
	alive := true
	for _, s := range changes {
		if channels[s.channel] == s.add {
			continue
		}
		if s.add {
			channels[s.channel] = true
		} else {
			delete(channels, s.channel)
		}
		alive = alive && forward(s)
	}
	return alive
}

// Close stops listening; nil is closed.
func (w *Waker) Close() {
	if w != nil {
		w.stop()
	}
}

// ListenFor registers a waiter for the release of key; stop ends it.
// second tells whether its last attempt was queued behind another client
// (see Wakeup.SetSecond). On a nil Waker, a client whose nodes cannot
// notify, the signals never come.
func (w *Waker) ListenFor(key string, second bool) (wake *Wakeup, stop func()) {
	if w == nil {
		return NoWakeup, func() {}
	}
	channel := w.keys.ReleaseChannel(key)
	wake = newWakeup()
	wake.second.Store(second)
	w.registerAs(channel, wake)
	return wake, func() { w.unregister(channel, wake) }
}

// ListenForAll starts listening for release announcements of any of keys,
// with one set of signals; everyone makes it hear every release (see
// Wakeup).
func (w *Waker) ListenForAll(keys []string, everyone bool) (wake *Wakeup, stop func()) {
	if w == nil {
		return NoWakeup, func() {}
	}
	wake = newWakeup()
	wake.everyone = everyone
	channels := make([]string, len(keys))
	for i, key := range keys {
		channels[i] = w.keys.ReleaseChannel(key)
		w.registerAs(channels[i], wake)
	}
	return wake, func() {
		for _, channel := range channels {
			w.unregister(channel, wake)
		}
	}
}

// Sleep waits d or until ctx ends, and reports whether d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Waiting returns how many waiters listen on channel.
func (w *Waker) Waiting(channel string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queues[channel])
}
