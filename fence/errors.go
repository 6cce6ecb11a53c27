package fence

import (
	"errors"
	"fmt"

	"github.com/redlock-go/redlock"
)

// Sentinel errors; compare with errors.Is.
var (
	// ErrStaleToken means a write or read was refused because its token is
	// below one the resource has already seen: another client was granted
	// the lock after the caller, whose lock was therefore lost, so it must
	// stop acting on the resource. A holder repeating its own token is never
	// refused. The error is a *StaleTokenError with both tokens.
	ErrStaleToken = errors.New("fence: stale token")
	// ErrInvalidToken means the token is 0, which no lock hands out; a
	// resource's last token reads as 0 before its first write.
	ErrInvalidToken = errors.New("fence: invalid token")
	// ErrInvalidResource means the resource name is empty.
	ErrInvalidResource = errors.New("fence: invalid resource")
)

// errNilContext is the error of a call given a nil context.
var errNilContext = fmt.Errorf("%w: pass context.Background() or a context that bounds the call", redlock.ErrNilContext)

// StaleTokenError reports a refused write or read with both tokens. It
// wraps ErrStaleToken.
type StaleTokenError struct {
	Resource string // the resource name, as given to Write
	Token    uint64 // the token the request carried
	Last     uint64 // the greater token the resource had seen, written or read
}

// Error says which token was refused and which greater one the resource had
// seen.
func (e *StaleTokenError) Error() string {
	return fmt.Sprintf("%v: resource %q: token %d is below %d, already seen", ErrStaleToken, e.Resource, e.Token, e.Last)
}

// Unwrap returns ErrStaleToken.
func (e *StaleTokenError) Unwrap() error { return ErrStaleToken }
