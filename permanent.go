package redlock

import (
	"errors"
	"fmt"
	"strings"
)

// permanentCodes are the Redis error codes that no retry fixes: the node's
// configuration (ACLs, a replica, a cluster, a renamed command) or its data
// (a key of another type where the library keeps its own) must change
// first. Errors the library's scripts raise for its own keys count too.
// LOADING, BUSY, TRYAGAIN, MOVED, ASK, CLUSTERDOWN, MASTERDOWN, timeouts
// and connection errors are transient, and retried.
var permanentCodes = []string{"NOPERM", "NOAUTH", "WRONGPASS", "READONLY", "WRONGTYPE", "CROSSSLOT"}

// permanentPhrases are parts of generic ERR replies that no retry fixes.
var permanentPhrases = []string{"unknown command", "redlock: "}

// unauthenticated is how Redis refuses a command longer than it takes from
// a connection that has not authenticated (more than 10 arguments, or one
// above 16 KiB), before closing it: where a short command gets NOAUTH.
const unauthenticated = "Protocol error: unauthenticated"

// noAuthError is Redis's refusal of a long command on a connection without
// credentials, reported as the NOAUTH that a short command gets. It wraps
// the node's error.
type noAuthError struct{ err error }

func (e *noAuthError) Error() string {
	return "NOAUTH Authentication required (" + e.err.Error() + ")"
}

func (e *noAuthError) Unwrap() error { return e.err }

// asNoAuth returns err, as a *noAuthError when it is Redis's refusal of a
// long command for want of credentials: the node needs a password its URL
// does not give, and should say so.
func asNoAuth(err error) error {
	if err == nil || !strings.Contains(err.Error(), unauthenticated) {
		return err
	}
	return &noAuthError{err: err}
}

// isPermanent reports whether a node's error is one that no retry fixes.
func isPermanent(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	for _, code := range permanentCodes {
		if strings.HasPrefix(msg, code+" ") || strings.Contains(msg, ": "+code+" ") {
			return true
		}
	}
	for _, phrase := range permanentPhrases {
		if strings.Contains(msg, phrase) {
			return true
		}
	}
	return false
}

// failFast adds to a failed acquisition's QuorumError, when so many nodes
// refused for a reason no retry fixes that a quorum is out of reach, a
// cause that wraps ErrInvalidOptions and names the first such node, and
// reports whether it did: retrying would only wait for the context to end.
func (e *QuorumError) failFast() bool {
	n, first := 0, -1
	for i, r := range e.Nodes {
		if r.Outcome == OutcomeError && isPermanent(r.Err) {
			n++
			if first < 0 {
				first = i
			}
		}
	}
	if n == 0 || len(e.Nodes)-n >= e.Quorum {
		return false
	}
	r := e.Nodes[first]
	e.Cause = fmt.Errorf("%w: %d of %d nodes refuse for a reason no retry fixes, first %s: %v; fix them or take them out of the node list",
		ErrInvalidOptions, n, len(e.Nodes), r.Node, r.Err)
	return true
}

// failFast reports whether err is an acquisition that failed for a reason
// no retry fixes (see QuorumError.failFast), after adding its cause.
func failFast(err error) bool {
	if err == nil {
		return false // a granted lock: no error to look into, nothing allocated
	}
	qe := quorumError(err)
	return qe != nil && qe.Cause == nil && qe.failFast()
}

// quorumError returns the *QuorumError in err's chain, or nil. The target
// errors.As needs escapes to the heap; in a function of its own, only the
// calls that have an error pay for it.
func quorumError(err error) *QuorumError {
	var qe *QuorumError
	if errors.As(err, &qe) {
		return qe
	}
	return nil
}
