package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/internal/wire"
)

// lockFlags choose what a command takes, or acts on, under the name KEY:
// the lock KEY itself by default, as its writer; with --shared the lock KEY
// as one of its readers; with --limit N one of the N permits of the
// semaphore KEY. Every command that names a lock registers the flags its
// verb needs, each with the usage that verb gives it.
type lockFlags struct {
	limit  limitFlag
	shared bool
	owner  string        // --owner, "" for the library's default
	delay  time.Duration // --lock-delay, 0 for none
}

// ownerUsage describes --owner for the verbs that take a lock.
const ownerUsage = "name the holder `OWNER` in the lock's token, which inspect and list show with the time of the grant; " +
	"1 to 255 bytes of printable ASCII without spaces"

// registerOwner adds --owner to fs.
func (l *lockFlags) registerOwner(fs *flag.FlagSet) {
	fs.Var(ownerValue{describedString{&l.owner, "this host's name and the process id, host:pid"}}, "owner", ownerUsage)
}

// ownerValue is --owner's value: an empty one is refused, where it would
// quietly stand for the default, and so is one the library would refuse,
// before any node is asked.
type ownerValue struct{ describedString }

func (o ownerValue) Set(s string) error {
	if s == "" {
		return errors.New("empty: give 1 to 255 bytes, or leave --owner out for the default")
	}
	if msg := wire.CheckOwner(s); msg != "" {
		return errors.New(msg)
	}
	return o.describedString.Set(s)
}

// lockDelayUsage describes --lock-delay for the verbs that take a lock.
const lockDelayUsage = "keep the lock from everyone for this `duration` (or bare number of seconds) more when it ends " +
	"without a release (the holder crashed, hung or lost the nodes), so that its late writes land before the next holder's; " +
	"a release frees it at once. Up to 1m, and --ttl plus it at most --recovery-delay"

// registerLockDelay adds --lock-delay to fs.
func (l *lockFlags) registerLockDelay(fs *flag.FlagSet) {
	secondsVar(fs, &l.delay, "lock-delay", 0, lockDelayUsage)
}

// sharedUsage describes --shared for the verbs that take a lock.
const sharedUsage = "take KEY shared, as one of its readers: any number of readers hold it at once, " +
	"and no writer (a command without --shared); readers and writers that wait are served in the order they came"

// registerShared adds --shared to fs, described by usage.
func (l *lockFlags) registerShared(fs *flag.FlagSet, usage string) {
	fs.BoolVar(&l.shared, "shared", false, usage)
}

// registerLimit adds --limit to fs, described by usage, which names its
// argument N.
func (l *lockFlags) registerLimit(fs *flag.FlagSet, usage string) {
	fs.Var(&l.limit, "limit", usage)
}

// limited reports whether --limit was given: KEY names a semaphore.
func (l *lockFlags) limited() bool { return l.limit > 0 }

// options returns the options that take what the flags name.
func (l *lockFlags) options() []redlock.LockOption {
	var opts []redlock.LockOption
	if l.limited() {
		opts = append(opts, redlock.WithLimit(int(l.limit)))
	}
	if l.shared {
		opts = append(opts, redlock.WithShared())
	}
	if l.owner != "" {
		opts = append(opts, redlock.WithOwner(l.owner))
	}
	if l.delay != 0 {
		opts = append(opts, redlock.WithLockDelay(l.delay))
	}
	return opts
}

// conflict says what is wrong with the flags for a command that takes the
// locks of keys together, and returns "" when nothing is: a semaphore's
// permit is a mutex of one name, so --limit goes with neither --shared nor
// several keys; a lock-delay is at most redlock.MaxLockDelay.
func (l *lockFlags) conflict(keys int) string {
	switch {
	case l.limited() && l.shared:
		return "--limit and --shared do not go together: a permit of a semaphore is held by one holder"
	case l.limited() && keys > 1:
		return fmt.Sprintf("--limit takes a permit of one KEY, not the locks of %d keys", keys)
	case l.delay < 0 || l.delay > redlock.MaxLockDelay:
		return fmt.Sprintf("--lock-delay must be in 0..%s", redlock.MaxLockDelay)
	}
	return ""
}

// delayConflict says what is wrong with --lock-delay beside the node flags
// n, and returns "" when nothing is: the TTL plus the delay must stay within
// --recovery-delay, as the TTL alone must.
func (l *lockFlags) delayConflict(n *nodeFlags) string {
	if l.delay <= 0 || n.ttl+l.delay <= n.recoveryDelay {
		return ""
	}
	return fmt.Sprintf("--ttl %s plus --lock-delay %s is above --recovery-delay %s: a node that restarted "+
		"without its data could grant the lock before the delay is over; shorten one, or raise "+
		"--recovery-delay to at least %s on every client of these nodes together", n.ttl, l.delay, n.recoveryDelay, n.ttl+l.delay)
}

// limitFlag is --limit: the number of permits of a semaphore, from 1 to
// redlock.MaxLimit; 0, its default, means a lock rather than a semaphore.
// Out of range values are refused as the command line is parsed, so that
// nothing is locked with them.
type limitFlag int

func (l *limitFlag) String() string {
	if l == nil {
		return "0"
	}
	return strconv.Itoa(int(*l))
}

func (l *limitFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > redlock.MaxLimit {
		return fmt.Errorf("want a number of permits from 1 to %d", redlock.MaxLimit)
	}
	*l = limitFlag(n)
	return nil
}

func (l *limitFlag) defaultText() string { return "none: the lock KEY itself" }

// target returns the key that token holds under the name key: key itself,
// or with --limit the key of the permit of the semaphore key that token
// holds, found by reading every permit (see findPermit).
func (l *lockFlags) target(ctx context.Context, client *redlock.Client, key, token string) (string, error) {
	if !l.limited() {
		return key, nil
	}
	permit, err := findPermit(ctx, client, key, int(l.limit), token)
	if err != nil && isPermitKey(key, int(l.limit)) {
		// KEY is a permit's key, as acquire printed it: act on it.
		return key, nil
	}
	return permit, err
}

// isPermitKey reports whether key has the form of a permit's key
// (NAME:permit:i) of a semaphore of limit permits.
func isPermitKey(key string, limit int) bool {
	i := strings.LastIndex(key, permitInfix)
	if i <= 0 {
		return false
	}
	n, err := strconv.Atoi(key[i+len(permitInfix):])
	return err == nil && n >= 1 && n <= limit
}

// permitHeld returns the key of the permit of the semaphore key that token
// holds, for a verb given KEY and TOKEN without --limit, when res, the
// check of key by token (with err, the check's error), says that token
// holds key on no node and nobody holds it on a majority: key then names
// no lock in use, and may name the semaphore of token's permit, which
// every permit a semaphore may have is read for (see findAnyPermit). ok
// is false when --limit was given, the check says otherwise, or no
// permit of key is token's. A lost lock that another holder took does
// not cost the search.
func (l *lockFlags) permitHeld(ctx context.Context, client *redlock.Client, key, token string,
	res redlock.CheckResult, err error) (permit string, ok bool) {
	if l.limited() || err != nil || res.Nodes > 0 || res.Holder.Token != "" || res.Shared {
		return "", false
	}
	permit = findAnyPermit(ctx, client, key, token)
	return permit, permit != ""
}
