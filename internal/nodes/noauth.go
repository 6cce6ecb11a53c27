package nodes

import "strings"

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
