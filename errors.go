package redlock

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors. Calls wrap them with detail (see QuorumError); compare with
// errors.Is, never ==.
var (
	// ErrNotAcquired means the lock could not be acquired: a quorum of nodes did
	// not grant it (it is held by another client, or too many nodes failed),
	// or the validity left after the round trips and the drift allowance was
	// not positive. Nothing is left locked behind it.
	ErrNotAcquired = errors.New("redlock: not acquired")
	// ErrNotExtended means an extension did not reach a quorum in time. The
	// lock stays valid until its previous deadline (Lock.Until).
	ErrNotExtended = errors.New("redlock: not extended")
	// ErrNotReleased means fewer than a quorum of nodes answered the release.
	// The keys left on silent nodes expire with their TTL.
	ErrNotReleased = errors.New("redlock: not released")
	// ErrNotHeld means no node that answered held the lock with this token any
	// more: it had expired or was taken over. Releasing such a lock deletes
	// nothing and is harmless.
	ErrNotHeld = errors.New("redlock: lock not held")
	// ErrLockLost means the holder tried to keep the lock (WithAutoRenew, Do,
	// or a call of Extend) and could not: an extension found a majority of
	// nodes no longer holding it, or no extension succeeded before its
	// validity came within the loss margin. The holder must stop acting on
	// the protected resource.
	ErrLockLost = errors.New("redlock: lock lost")
	// ErrLockExpired means a lock that nobody tried to keep (taken without
	// WithAutoRenew and never extended) reached its validity deadline, or
	// came within its loss margin of it, before it was released: it ended as
	// its TTL said it would. As with ErrLockLost, Done is closed and the
	// holder must stop acting on the protected resource; but nothing failed,
	// and errors.Is(err, ErrLockLost) is false.
	ErrLockExpired = errors.New("redlock: lock expired")
	// ErrReleased is returned by calls on a lock that was already released,
	// and is the cause Lock.Err reports after a release.
	ErrReleased = errors.New("redlock: lock already released")
	// ErrExtendLimit means the lock was extended Options.MaxExtensions times.
	ErrExtendLimit = errors.New("redlock: extension limit reached")

	// ErrInvalidKey means the lock key is empty, or begins like one of the
	// keys the library keeps beside the locks on every node, with
	// Options.KeyPrefix: "redlock:marker", "redlock:process" (the restart
	// marker), "redlock:fence:" (the fencing counters), "redlock:queue:",
	// "redlock:queue-until:", "redlock:waiting:" (the waiters) or
	// "redlock:forced:" (forced releases).
	ErrInvalidKey = errors.New("redlock: invalid key")
	// ErrInvalidTTL means the TTL leaves no validity after the drift
	// allowance, or is below Redis's 1 ms resolution, or, cut to whole
	// milliseconds as Redis keeps it, is above Options.RecoveryDelay while
	// the restart quarantine is on: a node that
	// restarted without its data could then vote again while such a lock is
	// still valid. Long work keeps a TTL within the delay and renews the
	// lock (WithAutoRenew, Do); or every client raises the delay together.
	// It also means that the TTL's sum with Options.RecoveryDelay, for
	// which the lock's fencing counter outlives it, is beyond a
	// time.Duration.
	ErrInvalidTTL = errors.New("redlock: invalid TTL")
	// ErrDuplicateNode means the same node was given twice; two votes from one
	// server would break the quorum's independence.
	ErrDuplicateNode = errors.New("redlock: duplicate node")
	// ErrInvalidOptions means an option is out of range, or New was given
	// no node, or a nil one; or, beside ErrNotAcquired, that so many nodes
	// refuse for a reason no retry fixes (an ACL, a replica, a key of the
	// wrong type) that no quorum is possible.
	ErrInvalidOptions = errors.New("redlock: invalid options")
	// ErrNotBrandNew means Client.MarkReady, not forced, marked no node
	// ready: the deployment is not brand new. A node restarted or failed
	// over, or some nodes are ready while others are recovering, so a node
	// that lost its data may have forgotten a lock that the others still
	// hold. The error names the nodes.
	ErrNotBrandNew = errors.New("redlock: not a brand-new deployment")
	// ErrInvalidOwner means an owner (Options.Owner, WithOwner) cannot go
	// in a lock's token: it is empty, longer than MaxOwnerBytes, or holds a
	// byte outside printable ASCII or a space.
	ErrInvalidOwner = errors.New("redlock: invalid owner")
	// ErrInvalidToken means a token given to Check, ReleaseToken or
	// ExtendToken is empty, or a fencing token given to CheckFence is 0:
	// no lock has either.
	ErrInvalidToken = errors.New("redlock: invalid token")
)

// ErrClosed means a call was made after the Client's Close, or was waiting
// for a lock when Close was called: a closed Client sends nothing more.
var ErrClosed = errors.New("redlock: client closed")

// ErrNilContext means a call was given a nil context. Lock.Release and
// Locks.Release run with context.Background() instead, as a release always
// runs.
var ErrNilContext = errors.New("redlock: nil context")

// errNilContext is the error of a call given a nil context.
var errNilContext = fmt.Errorf("%w: pass context.Background() or a context that bounds the call", ErrNilContext)

// keyQuoteBytes is how much of a key messages quote.
const keyQuoteBytes = 64

// quoteKey returns key quoted for a message, shortened when long.
func quoteKey(key string) string {
	if len(key) <= keyQuoteBytes {
		return strconv.Quote(key)
	}
	return strconv.Quote(key[:keyQuoteBytes]) + "…" + " (" + strconv.Itoa(len(key)) + " bytes)"
}

// errNotMarkedReady is the verdict of a Client.MarkReady that could not mark
// every node ready; the *QuorumError that wraps it lists the nodes.
var errNotMarkedReady = errors.New("redlock: not marked ready")

// Outcome is what one node answered to one request.
type Outcome uint8

// The outcomes a node can report.
const (
	// OutcomeNoAnswer: the decision was made before this node answered.
	OutcomeNoAnswer Outcome = iota
	// OutcomeOK: the node granted, extended or released the lock.
	OutcomeOK
	// OutcomeHeld: the key is held by another token (acquire), or does not
	// hold ours any more (extend, release); or, for a reader (WithShared),
	// a writer waits for the key (NodeResult.WriterWaits).
	OutcomeHeld
	// OutcomeTimeout: no answer within the per-node timeout.
	OutcomeTimeout
	// OutcomeError: the node answered with an error or could not be reached.
	OutcomeError
	// OutcomeRecovering: the node lost its data, restarted or failed over
	// (its restart marker was missing or written by another Redis process)
	// less than Options.RecoveryDelay ago, and withholds its vote until every
	// lock it might have granted before has expired. NodeResult.RecoveringLeft
	// says for how long.
	OutcomeRecovering
	// OutcomeNotAsked: the request was sent to no node: the caller's
	// context had ended, or, for a permit of a semaphore, this client
	// holds every permit.
	OutcomeNotAsked
)

// String returns the outcome's name as errors print it: "ok", "held",
// "recovering", "timeout", "error", "no answer" or "not asked".
func (o Outcome) String() string {
	switch o {
	case OutcomeOK:
		return "ok"
	case OutcomeHeld:
		return "held"
	case OutcomeTimeout:
		return "timeout"
	case OutcomeError:
		return "error"
	case OutcomeRecovering:
		return "recovering"
	case OutcomeNotAsked:
		return "not asked"
	default:
		return "no answer"
	}
}

// recoveringRound is the precision of the time left in error messages.
const recoveringRound = 100 * time.Millisecond

// NodeResult is one node's part in a request.
type NodeResult struct {
	Node    string        // Conn.Name of the node
	Outcome Outcome       // what it answered
	Err     error         // the error, for OutcomeTimeout and OutcomeError
	Latency time.Duration // time to its answer; zero for OutcomeNoAnswer
	// RecoveringLeft is, for OutcomeRecovering, how long until the node
	// votes again, by its own clock.
	RecoveringLeft time.Duration
	// WriterWaits is, for OutcomeHeld in a reader's acquisition, that no
	// writer holds the key on the node but one that began waiting before
	// the reader waits for it: the node refuses the reader until that
	// writer has had its turn.
	WriterWaits bool
}

// QuorumError reports a request that did not reach a quorum, with every
// node's outcome. It wraps one of the sentinel errors, and the context's error
// when the caller's context ended, so errors.Is works for both.
type QuorumError struct {
	Op       string        // "acquire", "extend", "release", "force release", "mark ready", "check" or "leader"
	Key      string        // the lock key, with any prefix
	OK       int           // nodes that answered OutcomeOK
	Quorum   int           // nodes needed
	Validity time.Duration // validity left when a quorum was reached too late
	Nodes    []NodeResult  // one per node, in client order
	Err      error         // the sentinel
	Cause    error         // the context's error, if it ended the call
}

// Error lists the verdict, then each node's outcome; or, when no node was
// asked, says so.
func (e *QuorumError) Error() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	if e.unasked() {
		fmt.Fprintf(&b, ": key %s: ", quoteKey(e.Key))
		if e.Cause != nil {
			fmt.Fprintf(&b, "%v before any node was asked", e.Cause)
		} else {
			b.WriteString("no node was asked")
		}
		return b.String()
	}
	fmt.Fprintf(&b, ": key %s: %s on %d/%d nodes, %d needed", quoteKey(e.Key), e.verb(), e.OK, len(e.Nodes), e.Quorum)
	switch {
	case e.OK >= e.Quorum && e.Op == "leader":
		// A read that enough nodes answered, which name no one leader
		// on a quorum of them: a lead changing hands as they were read.
		b.WriteString(", but no one leader on a quorum of them")
	case e.OK >= e.Quorum:
		fmt.Fprintf(&b, ", but validity left was %s", e.Validity.Round(time.Microsecond))
	}
	if e.Cause != nil {
		fmt.Fprintf(&b, " (%v)", e.Cause)
	}
	for i, n := range e.Nodes {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(n.Node)
		b.WriteByte(' ')
		b.WriteString(e.describe(n))
	}
	return b.String()
}

// unasked reports that the request was sent to no node.
func (e *QuorumError) unasked() bool {
	for _, n := range e.Nodes {
		if n.Outcome != OutcomeNotAsked {
			return false
		}
	}
	return len(e.Nodes) > 0
}

// verb names what an OutcomeOK node did in e's operation, for messages:
// "granted", "extended", "released", "marked ready" or "answered".
func (e *QuorumError) verb() string {
	switch e.Op {
	case "extend":
		return "extended"
	case "release", "force release":
		return "released"
	case "mark ready":
		return "marked ready"
	case "check", "leader":
		return "answered"
	default:
		return "granted"
	}
}

func (e *QuorumError) describe(n NodeResult) string {
	switch n.Outcome {
	case OutcomeOK:
		return e.verb()
	case OutcomeHeld:
		switch {
		case e.Op != "acquire":
			return "not held"
		case n.WriterWaits:
			return "a writer is waiting"
		}
		return "held by another"
	case OutcomeTimeout:
		return "timeout"
	case OutcomeError:
		return "error: " + n.Err.Error()
	case OutcomeRecovering:
		return "recovering, votes again in " + n.RecoveringLeft.Round(recoveringRound).String()
	case OutcomeNotAsked:
		return "not asked"
	default:
		return "not waited for"
	}
}

// Unwrap returns the sentinel and, when set, the context's error.
func (e *QuorumError) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Err, e.Cause}
	}
	return []error{e.Err}
}
