package redlock

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// permanentCodes are the Redis error codes that no retry fixes: the node's
// configuration (ACLs, a replica, a cluster, a renamed command) or its data
// (a key of another type where the library keeps its own) must change
// first. Errors the library's scripts raise for its own keys count too.
// LOADING, BUSY, TRYAGAIN, MOVED, ASK, CLUSTERDOWN, MASTERDOWN, OOM,
// MISCONF, timeouts and connection errors are transient, and retried.
var permanentCodes = []string{"NOPERM", "NOAUTH", "WRONGPASS", "READONLY", "WRONGTYPE", "CROSSSLOT"}

// permanentPhrases are parts of generic ERR replies that no retry fixes:
// EVALSHA renamed away, a command a script calls renamed away (7.x:
// "called from script", 6.2: "called from Lua script"; Valkey: "Unknown
// command called from script"), and the errors of the library's own
// scripts.
var permanentPhrases = []string{"unknown command", "Unknown Redis command called from", "Unknown command called from", "redlock: "}

// codelessErrors map errors that a script's command meets without their
// own error code, by how their text begins, to the code such an error has
// outside a script: an ACL that denies the script's user a command or a
// key (Redis 7.0 tells it with ERR, 6.2 with no code at all).
var codelessErrors = []struct{ prefix, code string }{
	{"The user executing the script ", "NOPERM"},
	{"ACL failure in script", "NOPERM"}, // Valkey
}

// scriptErrorPrefix begins the error of a script that failed before Redis
// 7.0, which wraps what the script ran into: "ERR Error running script
// (call to f_<sha1>): @user_script:3: WRONGTYPE Operation against a key
// holding the wrong kind of value", after its code ERR, which rueidis
// drops from the errors it returns.
const scriptErrorPrefix = "Error running script (call to "

// isPermanent reports whether a node's error, or an error it wraps, is one
// that no retry fixes.
func isPermanent(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		msg := err.Error()
		if slices.Contains(permanentCodes, errorCode(msg)) {
			return true
		}
		for _, phrase := range permanentPhrases {
			if strings.Contains(msg, phrase) {
				return true
			}
		}
	}
	return false
}

// errorCode returns the Redis error code of an error reply's text, or ""
// when it has none: its first word when that is in capitals ("READONLY
// You can't write against a read only replica."), as Redis 7.x replies
// also when a command of a script failed ("... script: <sha1>, on
// @user_script:3."). Before 7.0, a failed script's error wraps the
// command's error, after where in the script it happened, once or twice
// and with a '-' when the script's call never ran the command:
//
//	ERR Error running script (call to f_<sha1>): @user_script:3: WRONGTYPE Operation against ...
//	ERR Error running script (call to f_<sha1>): @user_script:3: @user_script: 3: -READONLY You can't write ...
//
// and a script that catches the error (redis.pcall, or the batch script's
// pcall) returns it without the wrapping: "@user_script: 3: -READONLY
// ...". The code is then the wrapped error's. An error without a code of
// its own (see codelessErrors) has the code it has elsewhere.
func errorCode(msg string) string {
	msg = strings.TrimSpace(msg)
	if rest, ok := strings.CutPrefix(strings.TrimPrefix(msg, "ERR "), scriptErrorPrefix); ok {
		if _, after, found := strings.Cut(rest, "): "); found {
			msg = after
		}
	}
	for rest, ok := cutScriptPlace(msg); ok; rest, ok = cutScriptPlace(msg) {
		msg = rest
	}
	msg = strings.TrimPrefix(msg, "-")
	for _, e := range codelessErrors {
		if strings.HasPrefix(strings.TrimPrefix(msg, "ERR "), e.prefix) {
			return e.code
		}
	}
	word, _, _ := strings.Cut(msg, " ")
	if !isCode(word) {
		return ""
	}
	return word
}

// cutScriptPlace cuts a place in a script ("@user_script:3: " or
// "@user_script: 3: ", what Redis before 7.0 puts before a script's
// error) off the start of msg, and reports whether there was one.
func cutScriptPlace(msg string) (string, bool) {
	name, rest, ok := strings.Cut(msg, ":")
	if !ok || name == "" || strings.ContainsAny(name, " -") {
		return msg, false
	}
	rest = strings.TrimPrefix(rest, " ")
	line, rest, ok := strings.Cut(rest, ": ")
	if !ok || line == "" || strings.Trim(line, "0123456789") != "" {
		return msg, false
	}
	return rest, true
}

// isCode reports whether word is a Redis error code: capital letters.
func isCode(word string) bool {
	if len(word) < 2 {
		return false
	}
	for _, c := range word {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

// failFast adds to a failed acquisition's QuorumError, when so many nodes
// refused for a reason no retry fixes that a quorum is out of reach, a
// cause that wraps ErrInvalidOptions and the first such node's error
// (ErrDuplicateNode, say), naming the node, and reports whether it did:
// retrying would only wait for the context to end.
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
	e.Cause = fmt.Errorf("%w: %d of %d nodes refuse for a reason no retry fixes, first %s: %w; fix them or take them out of the node list",
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
	switch {
	case qe == nil:
		return false
	case qe.Cause == nil:
		return qe.failFast()
	default: // told before, or the context ended
		return errors.Is(qe.Cause, ErrInvalidOptions)
	}
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
