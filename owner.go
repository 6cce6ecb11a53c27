package redlock

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/redlock-go/redlock/internal/wire"
)

// MaxOwnerBytes is the longest owner (Options.Owner, WithOwner) accepted:
// every node keeps it in each token, and it fits the longest host name
// with a process id.
const MaxOwnerBytes = wire.MaxOwnerBytes

// WithOwner names the holder of this call's lock instead of
// Options.Owner: Inspect, List and `redlock inspect` show it. It goes in
// the lock's token. The call fails with ErrInvalidOwner for an owner that
// is empty, longer than MaxOwnerBytes, or holds a byte outside printable
// ASCII or a space.
func WithOwner(owner string) LockOption {
	return lockOption(func(c *lockConfig) { c.owner, c.named = owner, true })
}

// Grant is who was granted a lock, and when, as its token says.
type Grant struct {
	// Token is the grant's token.
	Token string
	// Owner is the holder's identity (Options.Owner, WithOwner); "" for a
	// token that does not carry one (another library's, such as redsync or
	// node-redlock, or this library's before owners).
	Owner string
	// Since is when the holder began the attempt that won, by its own
	// clock (which may differ from the reader's); zero when the token does
	// not say. Extensions do not change it.
	Since time.Time
	// LockDelay is the lock-delay the lock was acquired with
	// (WithLockDelay); 0 when none, or for a token that does not say.
	// Extensions keep it.
	LockDelay time.Duration
}

// TokenGrant returns what token says of its grant: its owner and since
// when it was granted, both zero for a token that does not say.
func TokenGrant(token string) Grant {
	info, _ := wire.ParseToken(token)
	return Grant{Token: token, Owner: info.Owner, Since: info.Granted, LockDelay: info.Delay}
}

// Owner returns the identity the lock was taken under (Options.Owner or
// WithOwner).
func (l *Lock) Owner() string { return TokenGrant(l.token).Owner }

// defaultOwner returns the default Options.Owner: "host:pid".
func defaultOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	pid := ":" + strconv.Itoa(os.Getpid())
	return wire.SanitizeOwner(host[:min(len(host), MaxOwnerBytes-len(pid))] + pid)
}

// checkOwner returns an ErrInvalidOwner error, naming where the owner was
// given, for an owner that cannot go in a token.
func checkOwner(owner, given string) error {
	if msg := wire.CheckOwner(owner); msg != "" {
		return fmt.Errorf("%w: %s %s: %s", ErrInvalidOwner, given, quoteKey(owner), msg)
	}
	return nil
}

// checkCallOwner checks the owner of one call.
func checkCallOwner(owner string) error { return checkOwner(owner, "WithOwner") }
