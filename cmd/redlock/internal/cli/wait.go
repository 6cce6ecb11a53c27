package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
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

// waiting takes a lock, or a permit of a semaphore, as --wait says, and
// tells on stderr why it waits.
type waiting struct {
	client *redlock.Client
	key    string
	// limit is the number of permits when key names a semaphore, else 0;
	// opts hold redlock.WithLimit(limit) then.
	limit  int
	wait   waitFlag
	stderr io.Writer
	cmd    string
	opts   []redlock.LockOption

	began  time.Time
	said   string // the last reason told, without its timings
	saidAt time.Time
	// last is the failure of the last attempt that a node answered, the
	// reason for the wait.
	last error
}

// acquire takes the lock: one attempt when --wait is 0; otherwise attempts
// until the lock is acquired, --wait has passed (never, when it is
// negative), a failure no retry fixes, or ctx ends. Once the first attempt
// failed, it says why it waits, and says it again as described at
// progressRepeat. A bounded wait that ends returns the last attempt's
// error, so that its exit code is that of the last reason; an attempt that
// the end of the wait cut short, before any node answered, gives none
// (see reason).
func (w *waiting) acquire(ctx context.Context) (*redlock.Lock, error) {
	if w.wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(w.wait))
		defer cancel()
	}
	lock, err := w.client.TryAcquire(ctx, w.key, w.opts...)
	if err == nil || w.wait == 0 || !errors.Is(err, redlock.ErrNotAcquired) ||
		errors.Is(err, redlock.ErrInvalidOptions) || ctx.Err() != nil {
		return lock, err
	}
	w.began, w.last = time.Now(), err
	w.tell(ctx, err)
	for {
		// Acquire keeps the client's place in the key's queue on the nodes
		// across these slices: an entry lasts seconds past its last attempt.
		slice, cancel := context.WithTimeout(ctx, progressCheck)
		lock, err = w.client.Acquire(slice, w.key, w.opts...)
		sliceEnded := slice.Err() != nil
		cancel()
		err = w.reason(err)
		if err == nil || ctx.Err() != nil || !sliceEnded {
			return lock, err
		}
		w.tell(ctx, err)
	}
}

// reason returns err, the failure of an Acquire, unless the end of its
// context cut its last attempt short before any node answered: every node
// then shows a timeout that says nothing of the lock, and the reason is
// still that of the last attempt that a node answered.
func (w *waiting) reason(err error) error {
	var qe *redlock.QuorumError
	if err == nil || !errors.As(err, &qe) || qe.Cause == nil || w.last == nil {
		return err
	}
	for _, r := range qe.Nodes {
		if r.Outcome != redlock.OutcomeTimeout && r.Outcome != redlock.OutcomeNoAnswer {
			w.last = err
			return err
		}
	}
	return w.last
}

// tell says why the lock could not be taken yet, when the reason changed
// or was last said progressRepeat ago.
func (w *waiting) tell(ctx context.Context, err error) {
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) {
		return
	}
	reason := waitReason(qe)
	if reason == w.said && time.Since(w.saidAt) < progressRepeat {
		return
	}
	w.said, w.saidAt = reason, time.Now()
	fmt.Fprintf(w.stderr, "redlock %s: waiting for %q (%s so far): %s\n",
		w.cmd, w.key, time.Since(w.began).Round(time.Second), w.describe(ctx, qe))
}

// waitReason names what kept the last attempt from a quorum, each node's
// outcome without timings, so that an unchanged reason is not repeated at
// every check.
func waitReason(qe *redlock.QuorumError) string {
	var b strings.Builder
	for _, r := range qe.Nodes {
		fmt.Fprintf(&b, "%s=%s;", r.Node, outcomeName(qe.Op, r.Outcome))
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
		parts = append(parts, fmt.Sprintf("%d of %d nodes recovering, for up to %s more "+
			"(on a brand-new deployment, 'redlock init' ends this at once)", len(rec), len(qe.Nodes), left.Round(time.Second)))
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
// nodes. A semaphore's permits are tried one after the other and the
// attempt gives up only when each is held by another holder somewhere, so
// held nodes there mean that all the permits are taken; naming their
// holders would take a read per permit, which inspect does on demand.
func (w *waiting) heldBy(ctx context.Context, qe *redlock.QuorumError, held int) string {
	if w.limit > 0 {
		return fmt.Sprintf("all %d permits held by other holders ('redlock inspect --limit %d %s' lists them)",
			w.limit, w.limit, w.key)
	}
	return fmt.Sprintf("held by another holder on %d of %d nodes%s", held, len(qe.Nodes), w.holder(ctx))
}

// holder names the token that holds the lock on a majority, and how long
// its TTL has left there, read with Inspect; "" when none does.
func (w *waiting) holder(ctx context.Context) string {
	states, err := w.client.Inspect(ctx, w.key)
	if err != nil {
		return ""
	}
	token, _, _ := verdict(states, len(states)/2+1)
	if token == "" {
		return ""
	}
	var ttl time.Duration
	for _, st := range states {
		if st.Holder == token {
			ttl = max(ttl, st.TTL)
		}
	}
	return fmt.Sprintf(" (token %s, expires in %s unless extended)", token, ttl.Round(100*time.Millisecond))
}
