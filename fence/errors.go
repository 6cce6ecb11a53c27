package fence

import (
	"errors"
	"fmt"
)

// Sentinel errors; compare with errors.Is.
var (
	// ErrStaleToken means a write was refused because its token is not
	// greater than the last one the resource accepted: the writer's lock was
	// lost (and probably taken by another client), so it must stop acting on
	// the resource. The error is a *StaleTokenError with both tokens.
	ErrStaleToken = errors.New("fence: stale token")
	// ErrInvalidToken means the token is 0, which no lock hands out; a
	// resource's last token reads as 0 before its first write.
	ErrInvalidToken = errors.New("fence: invalid token")
	// ErrInvalidResource means the resource name is empty.
	ErrInvalidResource = errors.New("fence: invalid resource")
)

// StaleTokenError reports a refused write with both tokens. It wraps
// ErrStaleToken.
type StaleTokenError struct {
	Resource string // the resource name, as given to Write
	Token    uint64 // the token the write carried
	Last     uint64 // the last token the resource accepted
}

// Error says which token was refused and which one was accepted last.
func (e *StaleTokenError) Error() string {
	return fmt.Sprintf("%v: resource %q: token %d is not greater than %d, the last accepted", ErrStaleToken, e.Resource, e.Token, e.Last)
}

// Unwrap returns ErrStaleToken.
func (e *StaleTokenError) Unwrap() error { return ErrStaleToken }
