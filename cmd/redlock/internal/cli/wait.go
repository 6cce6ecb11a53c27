package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock"
)

// Pace of what a command waiting for a lock says on stderr: often enough
// that nobody wonders whether it hangs, calm enough for a log file.
const (
	// progressCheck is how often a waiting command looks again at why it
	// still waits.
	progressCheck = 5 * time.Second
	// progressRepeat is how often an unchanged reason is said again; a
	// changed one is said at the next check.
	progressRepeat = 30 * time.Second
)

// waiting takes a lock, a permit of a semaphore, or the locks of several
// keys together, as --wait says, and tells on stderr why it waits.
type waiting struct {
	client *redlock.Client
	// keys are the names to take: one, or several taken all or nothing
	// (redlock.Client.AcquireAll).
	keys []string
	// limit is the number of permits when the one key names a semaphore,
	// else 0; opts hold redlock.WithLimit(limit) then.
	limit int
	// shared: the keys are taken as a reader; opts hold redlock.WithShared.
	shared bool
	wait   waitFlag
	stderr io.Writer
	cmd    string
	opts   []redlock.LockOption
	// note is said once, with the first reason that names a node that
	// failed: why the command reaches the nodes it does (unsetNote).
	note string

	began time.Time
	// start is when the command began, which --wait counts from (the
	// check of the nodes included); zero for when the attempts begin.
	start  time.Time
	said   string // the last reason told, without its timings
	saidAt time.Time
	// holder is the token of the holder that the last reason told named,
	// "" when it named none: a new holder is told at the next check.
	holder string
	// last is the failure of the last attempt that a node answered, the
	// reason for the wait; recent is the last attempt's, which is told.
	last, recent error
	// campaign is the value of an election's candidate, which waits by
	// Campaign for the one key, its election's name; "" for a lock.
	campaign string
	// quietConflict leaves untold a wait for another holder's release, as
	// --conflict-exit-code 0 without --verbose asks: its end says nothing
	// either (runConfig.notAcquired).
	quietConflict bool
	// settled is set once the waiting call returned: a reason looked up as
	// it won would name the command's own attempt as the holder, and is
	// not told.
	settled atomic.Bool
}

// acquire takes the lock: one attempt when --wait is 0; otherwise attempts
// until the lock is acquired, --wait has passed (never, when it is
// negative), a failure no retry fixes, or ctx ends. Once the first attempt
// failed, it says why it waits, and says it again as described at
// progressRepeat. A bounded wait that ends returns the last attempt's
// error, so that its exit code is that of the last reason; an attempt that
// the end of the wait cut short, before any node answered, gives none
// (see reason). The error adds the note when it was not said yet, and
// says when readers hold the key a writer was refused (sharedNote).
func (w *waiting) acquire(ctx context.Context) (holding, error) {
	held, err := w.attempts(ctx)
	if err != nil && w.note != "" && failingNodes(err) {
		err = fmt.Errorf("%w: %w", err, &detail{text: w.note})
	}
	if err != nil {
		err = w.sharedNote(ctx, err)
	}
	return held, err
}

// sharedNote explains err, a failed acquisition, when the key it found
// held is held by a writer that a quorum of the nodes agree on, or, for a
// writer, by readers: the nodes' answers say only that the key is held, and Inspect
// says by whom, as heldBy does while waiting. It returns err otherwise.
func (w *waiting) sharedNote(ctx context.Context, err error) error {
	var qe *redlock.QuorumError
	if w.limit > 0 || classify(err) != failConflict || !errors.As(err, &qe) {
		return err
	}
	key := w.keys[0]
	if len(w.keys) > 1 {
		key = qe.Key // the client has no key prefix: the key is the name
	}
	states, ierr := lookAgain(ctx, w.client, key)
	if ierr != nil {
		return err
	}
	if token, holding, _ := verdict(states, len(states)/2+1); token != "" {
		owner := ""
		if g := redlock.TokenGrant(token); g.Owner != "" {
			owner = ", owner " + g.Owner
		}
		return fmt.Errorf("%w: %w", err, &detail{text: fmt.Sprintf("%q is held by another holder on %d of %d nodes (token %s%s, %s)",
			key, holding, len(states), token, owner, expiresText(states, token))})
	}
	shared := sharedText(states)
	if shared == "" || w.shared {
		// Readers refuse a reader only while a writer waits, which the
		// nodes' answers say.
		return err
	}
	return fmt.Errorf("%w: %w", err, &detail{text: fmt.Sprintf("%q is held %s: a writer gets it once the last of them "+
		"is released or expires", key, shared)})
}

// attempts is acquire without what it adds to the error: the attempts,
// and what it says while they fail.
func (w *waiting) attempts(ctx context.Context) (holding, error) {
	var err error
	queued := w.queuesFromTheStart()
	if !queued {
		// The first attempt is made whatever the check of the nodes left
		// of the wait: it is bounded by the node timeout.
		var held holding
		if held, err = w.take(ctx, true); w.firstIsLast(ctx, err) {
			return held, err
		}
	}
	ctx, cancel := w.withinWait(ctx)
	defer cancel()
	if w.wait > 0 && ctx.Err() != nil && !queued {
		return nil, &cutShort{err: err, cause: ctx.Err()} // the wait ran out
	}
	w.began, w.last, w.recent = time.Now(), err, err
	if !queued {
		w.tell(ctx, err)
	}
	return w.waitTelling(ctx, queued)
}

// firstIsLast reports whether the first attempt, which ended with err, ends
// the wait: it won, there is no wait, or it failed for a reason other than
// the key held, or ctx ended.
func (w *waiting) firstIsLast(ctx context.Context, err error) bool {
	return err == nil || w.wait == 0 || !errors.Is(err, redlock.ErrNotAcquired) ||
		errors.Is(err, redlock.ErrInvalidOptions) || ctx.Err() != nil
}

// withinWait returns ctx bounded by --wait from the wait's start (now when
// it has none), and ctx itself when the wait is unbounded.
func (w *waiting) withinWait(ctx context.Context) (context.Context, context.CancelFunc) {
	if w.wait <= 0 {
		return ctx, func() {}
	}
	start := w.start
	if start.IsZero() {
		start = time.Now()
	}
	return context.WithDeadline(ctx, start.Add(time.Duration(w.wait)))
}

// taken is what the waiting call returned.
type taken struct {
	held holding
	err  error
}

// waitTelling makes the one Acquire (AcquireAll, Campaign) that waits to
// the end, keeping the client's place in the key's queue on the nodes,
// which a call that ends gives up. It tells the first failed attempt of a
// wait that queued from the start at once, and every progressCheck the
// last one told is the reason said.
func (w *waiting) waitTelling(ctx context.Context, queued bool) (holding, error) {
	var told atomic.Pointer[error]
	first := make(chan struct{}, 1) // the first failed attempt, told at once
	notify := redlock.WithRetryNotify(func(err error) {
		told.Store(&err)
		select {
		case first <- struct{}{}:
		default:
		}
	})
	done := make(chan taken, 1)
	go func() {
		held, err := w.take(ctx, false, notify)
		w.settled.Store(true)
		done <- taken{held, err}
	}()
	check := time.NewTicker(progressCheck)
	defer check.Stop()
	firstFailed := (<-chan struct{})(first)
	for {
		select {
		case t := <-done:
			w.latest(&told)
			return t.held, w.reason(t.err)
		case <-firstFailed:
			firstFailed = nil // told once
			if queued {
				w.latest(&told)
				w.tell(ctx, w.recent)
			}
		case <-check.C:
			w.latest(&told)
			w.tell(ctx, w.recent)
		}
	}
}

// latest takes the failed attempt told last, if any since, as the recent
// reason, and as the last one when nodes answered it.
func (w *waiting) latest(told *atomic.Pointer[error]) {
	if err := told.Swap(nil); err != nil {
		w.recent = *err
		if answered(*err) {
			w.last = *err
		}
	}
}

// queuesFromTheStart reports whether the first attempt is AcquireAll's own,
// rather than one of TryAcquireAll: for a writer that waits for several
// keys, with time left to wait. Its first attempt defers to the waiters for
// overlapping sets that came before it, where TryAcquireAll's would take
// their keys from them (see redlock.Client.AcquireAll).
func (w *waiting) queuesFromTheStart() bool {
	if len(w.keys) < 2 || w.shared || w.wait == 0 {
		return false
	}
	return w.wait < 0 || w.start.IsZero() || time.Now().Before(w.start.Add(time.Duration(w.wait)))
}

// take makes one attempt when once is set, else attempts until ctx ends:
// those of Acquire for one key, those of AcquireAll for several, which
// takes them all or none. It returns what it holds, or nil and why not.
func (w *waiting) take(ctx context.Context, once bool, more ...redlock.LockOption) (holding, error) {
	opts := append(w.opts[:len(w.opts):len(w.opts)], more...)
	if once && w.campaign != "" {
		// One attempt takes the lead's lock as Campaign would: the
		// candidate's value is its owner.
		opts = append(opts, redlock.WithOwner(w.campaign))
	}
	if len(w.keys) > 1 {
		acquireAll := w.client.AcquireAll
		if once {
			acquireAll = w.client.TryAcquireAll
		}
		set, err := acquireAll(ctx, w.keys, opts...)
		if err != nil {
			return nil, err
		}
		return set, nil
	}
	if !once && w.campaign != "" {
		return w.elect(ctx, opts)
	}
	acquire := w.client.Acquire
	if once {
		acquire = w.client.TryAcquire
	}
	lock, err := acquire(ctx, w.keys[0], opts...)
	if err != nil {
		return nil, err
	}
	return lock, nil
}

// elect waits as a candidate in the election on the one key, with the
// value campaign, and returns the lock it leads by: Campaign tries again
// at once when the lead's key expires, which no release announces, and
// elects the candidates in the order they came.
func (w *waiting) elect(ctx context.Context, opts []redlock.LockOption) (holding, error) {
	e, err := w.client.NewElection(w.keys[0], opts...)
	if err != nil {
		return nil, err
	}
	if err := e.Campaign(ctx, w.campaign); err != nil {
		return nil, err
	}
	if lock := e.Lock(); lock != nil {
		return lock, nil
	}
	return nil, e.Err() // lost in the instant it was won
}

// reason returns err, the failure of an Acquire, unless the end of its
// context cut its last attempt short before any node answered, or came
// before it asked any: every node then shows a timeout, or that it was not
// asked, which says nothing of the lock, and the reason is still that of
// the last attempt that a node answered.
func (w *waiting) reason(err error) error {
	var qe *redlock.QuorumError
	if err == nil || !errors.As(err, &qe) || qe.Cause == nil || w.last == nil {
		return err
	}
	if answered(err) {
		w.last = err
		return err
	}
	return &cutShort{err: w.last, cause: qe.Cause}
}

// answered reports that a node answered the failed attempt err: an
// outcome other than no answer in time, or not asked.
func answered(err error) bool {
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) {
		return false
	}
	for _, r := range qe.Nodes {
		if r.Outcome != redlock.OutcomeTimeout && r.Outcome != redlock.OutcomeNoAnswer && r.Outcome != redlock.OutcomeNotAsked {
			return true
		}
	}
	return false
}

// cutShort is the failure of the last attempt that a node answered, given
// as the reason of a wait whose end cut a later attempt short: its text is
// that attempt's, and it also wraps what ended the wait, so that the
// failure says "(the wait ran out)" as every other ended wait does.
type cutShort struct {
	err   error
	cause error
}

func (e *cutShort) Error() string   { return e.err.Error() }
func (e *cutShort) Unwrap() []error { return []error{e.err, e.cause} }

// endedBy returns what ended the wait behind err: the cause of its quorum
// error qe or, when a later attempt was cut short, that attempt's.
func endedBy(err error, qe *redlock.QuorumError) error {
	var cs *cutShort
	if qe.Cause == nil && errors.As(err, &cs) {
		return cs.cause
	}
	return qe.Cause
}

// tell says why the lock could not be taken yet, when the reason changed
// or was last said progressRepeat ago.
func (w *waiting) tell(ctx context.Context, err error) {
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) || w.quietConflict && classify(err) == failConflict {
		return
	}
	reason := waitReason(qe)
	told := w.holder
	unchanged := reason == w.said && time.Since(w.saidAt) < progressRepeat
	if unchanged && len(nodesWith(qe, redlock.OutcomeHeld)) == 0 {
		return
	}
	// Held still, maybe by another holder since: describe looks again.
	why := w.describe(ctx, qe)
	if unchanged && w.holder == told {
		return
	}
	if w.settled.Load() {
		return // what describe found may be the attempt that won
	}
	w.said, w.saidAt = reason, time.Now()
	if w.note != "" && failingNodes(err) {
		why += " (" + w.note + ")"
		w.note = ""
	}
	sayf(w.stderr, slog.LevelInfo, w.cmd, "waiting for %s (%s so far): %s",
		quoteKeys(w.keys), time.Since(w.began).Round(time.Second), why)
}

// failingNodes reports whether err, a failed acquisition, has nodes that
// failed: no answer in time, or an error.
func failingNodes(err error) bool {
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) {
		return false
	}
	return len(nodesWith(qe, redlock.OutcomeTimeout))+len(nodesWith(qe, redlock.OutcomeError)) > 0
}

// waitReason names what kept the last attempt from a quorum as describe
// tells it, without timings or counts: the key refused, whether another
// holder holds it or a writer waits for it, whether nodes are recovering,
// and which nodes failed.
// Which nodes granted, or were not waited for once the outcome was
// decided, changes from one attempt to the next and is left out, so that
// an unchanged reason is not told again at every check.
func waitReason(qe *redlock.QuorumError) string {
	var b strings.Builder
	b.WriteString(qe.Key + ":")
	if len(nodesWith(qe, redlock.OutcomeHeld)) > 0 {
		b.WriteString("held;")
	}
	if writersWait(qe) > 0 {
		b.WriteString("writer waits;")
	}
	if len(nodesWith(qe, redlock.OutcomeRecovering)) > 0 {
		b.WriteString("recovering;")
	}
	for _, r := range qe.Nodes {
		if r.Outcome == redlock.OutcomeTimeout || r.Outcome == redlock.OutcomeError {
			fmt.Fprintf(&b, "%s=%s;", r.Node, outcomeName(qe.Op, r.Outcome))
		}
	}
	return b.String()
}

// describe tells what the nodes answered to the last attempt: who holds
// the lock, which nodes are recovering, which did not answer.
func (w *waiting) describe(ctx context.Context, qe *redlock.QuorumError) string {
	var parts []string
	if held := nodesWith(qe, redlock.OutcomeHeld); len(held) > 0 {
		parts = append(parts, w.heldBy(ctx, qe, len(held)))
	}
	if rec := nodesWith(qe, redlock.OutcomeRecovering); len(rec) > 0 {
		var left time.Duration
		for _, r := range qe.Nodes {
			left = max(left, r.RecoveringLeft)
		}
		parts = append(parts, fmt.Sprintf("%s recovering, for up to %s more "+
			"(only on a brand-new deployment may 'redlock init' end this at once)",
			strings.TrimPrefix(refusedOn(qe, len(rec)), "on "), left.Round(time.Second)))
	}
	for _, r := range qe.Nodes {
		if r.Outcome == redlock.OutcomeTimeout || r.Outcome == redlock.OutcomeError {
			parts = append(parts, r.Node+" "+outcomeText(qe.Op, r))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("granted on %d of %d nodes, %d needed", qe.OK, len(qe.Nodes), qe.Quorum))
	}
	return strings.Join(parts, "; ")
}

// heldBy says who holds what the last attempt found held, on held of the
// nodes: the key qe names, among several. A semaphore's permits are tried
// one after the other and the attempt gives up only when each is held by
// another holder somewhere, so held nodes there mean that all the permits
// are taken; naming their holders would take a read per permit, which
// inspect does on demand.
func (w *waiting) heldBy(ctx context.Context, qe *redlock.QuorumError, held int) string {
	if w.limit > 0 {
		all := fmt.Sprintf("all %d permits", w.limit)
		if w.limit == 1 {
			all = "the one permit"
		}
		return fmt.Sprintf("%s held by other holders ('redlock inspect --limit %d %s' lists them)", all, w.limit, w.keys[0])
	}
	key, which := w.keys[0], ""
	if len(w.keys) > 1 {
		key = qe.Key // the client has no key prefix: the key is the name
		which = strconv.Quote(key) + " "
	}
	what := which + "held"
	on := refusedOn(qe, held)
	// What to say when Inspect does not find who holds the key: a writer
	// waits for it, when every node that refused said so.
	unknown := what + " by another holder " + on
	if writersWait(qe) == held {
		unknown = fmt.Sprintf("%s%s for it %s, and new readers wait until it has had its turn", which, writerWaiting, on)
	}
	w.holder = ""
	states, err := w.client.Inspect(ctx, key)
	if err != nil {
		return unknown
	}
	quorum := len(states)/2 + 1
	// The counts below are Inspect's, which asks every node, as
	// 'redlock inspect' does.
	if token, holding, _ := verdict(states, quorum); token != "" {
		w.holder = token
		owner := ""
		if g := redlock.TokenGrant(token); g.Owner != "" {
			owner = ", owner " + g.Owner
		}
		return fmt.Sprintf("%s by another holder on %d of %d nodes (token %s%s, %s)",
			what, holding, len(states), token, owner, expiresText(states, token))
	}
	shared := sharedText(states)
	if shared == "" {
		if waiting := mostWaiting(states); waiting > 0 && writersWait(qe) == 0 {
			// Free, but the nodes keep it for the clients queued before
			// this one: an earlier candidate, a waiter polled first.
			return fmt.Sprintf("%sfree, but kept for the clients queued before this one (%d queued in all)", which, waiting)
		}
		return unknown
	}
	s := what + " " + shared
	if w.shared {
		// Readers refuse a reader only while a writer waits.
		s += "; a writer waits for it, and new readers wait until it has had its turn"
	}
	return s
}

// mostWaiting returns the most clients a node that answered queues for
// the key, by states.
func mostWaiting(states []redlock.NodeState) int {
	most := 0
	for _, st := range states {
		if st.Err == nil {
			most = max(most, st.Waiting)
		}
	}
	return most
}

// sharedText says that readers hold the lock whose nodes' states are
// states, how many of them, on how many nodes and until when: "shared by 2
// readers on 3 of 3 nodes (...)"; "" when no readers hold it on a quorum,
// or a writer does.
func sharedText(states []redlock.NodeState) string {
	quorum := len(states)/2 + 1
	if token, _, _ := verdict(states, quorum); token != "" {
		return ""
	}
	if delayedOn(states) >= quorum {
		return fmt.Sprintf("kept by the lock-delay of readers whose TTLs ran out, on %d of %d nodes, for %s", delayedOn(states), len(states),
			longestTTL(states, "").Round(100*time.Millisecond))
	}
	readers := sharedBy(states, quorum)
	if len(readers) == 0 {
		return ""
	}
	return fmt.Sprintf("shared by %s on %d of %d nodes (the last expires in %s unless extended)",
		countReaders(len(readers)), nodesWithReaders(states), len(states), longestTTL(states, "").Round(100*time.Millisecond))
}

// refusedOn says on how many of the nodes of qe the attempt was refused,
// held of them: "on 2 of 3 nodes" when every node answered, "on at least 2
// of 3 nodes" when the attempt ended, its outcome decided, before some
// nodes answered or were asked.
func refusedOn(qe *redlock.QuorumError, held int) string {
	if len(nodesWith(qe, redlock.OutcomeNoAnswer))+len(nodesWith(qe, redlock.OutcomeNotAsked)) > 0 {
		return fmt.Sprintf("on at least %d of %d nodes", held, len(qe.Nodes))
	}
	return fmt.Sprintf("on %d of %d nodes", held, len(qe.Nodes))
}

// nodesWithReaders counts the nodes that answered with readers holding
// the key.
func nodesWithReaders(states []redlock.NodeState) int {
	n := 0
	for _, st := range states {
		if st.Err == nil && len(st.Readers) > 0 {
			n++
		}
	}
	return n
}

// writersWait counts the nodes of qe that refused a reader because a writer
// waits for the key.
func writersWait(qe *redlock.QuorumError) int {
	n := 0
	for _, r := range qe.Nodes {
		if r.Outcome == redlock.OutcomeHeld && r.WriterWaits {
			n++
		}
	}
	return n
}

// expiresText says when the key that token holds expires: in the longest
// TTL it has left on a node, unless extended; or never, on a node where it
// has no expiry (a lock of another library that sets none); or when its
// lock-delay ends, where only that keeps the key.
func expiresText(states []redlock.NodeState, token string) string {
	for _, st := range states {
		if st.Err == nil && st.Holder == token && st.TTL < 0 {
			return "no expiry: only its holder's release frees it"
		}
	}
	if delayKept(states, token) > 0 {
		return fmt.Sprintf("its TTL ran out; its lock-delay keeps the key for %s", longestTTL(states, token).Round(100*time.Millisecond))
	}
	return fmt.Sprintf("expires in %s unless extended", longestTTL(states, token).Round(100*time.Millisecond))
}

// longestTTL returns the longest TTL the nodes that answered have left for
// the lock while token holds it there, or, when token is "", while readers
// do.
func longestTTL(states []redlock.NodeState, token string) time.Duration {
	var ttl time.Duration
	for _, st := range states {
		if st.Err == nil && ((token != "" && st.Holder == token) || (token == "" && len(st.Readers) > 0)) {
			ttl = max(ttl, st.TTL)
		}
	}
	return ttl
}
