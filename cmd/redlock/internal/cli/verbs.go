package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/internal/wire"
)

// keyArgs checks the KEY [KEY...] arguments of acquire and inspect as run
// checks its keys. It returns the usage error, or "".
func keyArgs(args []string) string {
	if len(args) == 0 {
		return "want KEY [KEY...], got no argument"
	}
	return checkKeys(args)
}

// positional checks that args holds exactly the named positional
// arguments, none of them empty. It returns the usage error, or "".
func positional(args []string, names ...string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "-") && len(a) > 1 && len(args) > len(names) && len(names) > 0 {
			return fmt.Sprintf("flags go before %s; %q came after", names[0], a)
		}
	}
	if len(args) != len(names) {
		if len(names) == 0 {
			return fmt.Sprintf("takes no arguments, got %d", len(args))
		}
		return fmt.Sprintf("want %s, got %d argument(s)", strings.Join(names, " "), len(args))
	}
	for i, a := range args {
		if a == "" {
			return names[i] + " is empty"
		}
	}
	return ""
}

func acquireCommand() *command {
	return &command{
		name:       "acquire",
		jsonReport: true,
		synopsis:   "[flags] KEY [KEY...]",
		summary:    "take the lock KEY, or several together (shared: --shared; a permit: --limit N), print the tokens",
		about: `
Acquires the lock KEY and prints its token, fencing token and validity
deadline. The lock is not renewed: it expires after --ttl unless
'redlock extend KEY TOKEN' extends it, and 'redlock release KEY TOKEN'
releases it. Prefer 'redlock run', which renews and releases by itself.
--ttl is at most --recovery-delay (30s by default): hold a lock for longer
by renewing it, or raise --recovery-delay on every client of the nodes
together.

Several keys: 'acquire K1 K2 K3' takes all the keys together, or none, as
'redlock run K1 K2 K3 -- COMMAND' does: it never holds some while it waits
for the others. Each key is a lock of its own, with its own token, which
extend and release take one key at a time. With --shared it reads every
key; --limit takes one key only.

With --limit N it takes one of the N permits of the semaphore KEY instead:
at most N holders at once, across hosts. Permit i is the lock KEY:permit:i,
with its own fencing tokens; the semaphore KEY and the lock KEY are
different things, and every holder of one semaphore should give the same N.

With --shared it takes KEY as a reader of a read-write lock: any number of
readers hold KEY at once, and no writer (acquire or run without --shared).
Readers and writers that wait are served in the order they came: a writer
that waits keeps new readers out until it has had its turn, and a reader
that waits new writers. A reader's token is extended and released as any: 'redlock release KEY TOKEN'.

Output, one field per line (or one JSON object with --json):
  key       KEY, or with --limit the permit's key, KEY:permit:i
  permit    with --limit: "i of N" ("permit" and "limit" in JSON)
  shared    with --shared: "yes, a reader" ("shared": true in JSON)
  token     the token; extend and release need it
  fence     the fencing token, to pass to the protected resource
  deadline  the validity deadline, RFC 3339 UTC, and the validity left
For several keys, these fields for each key in the order given, separated
by an empty line; with --json one object, {"keys": [KEY...], "locks":
[one object per key, as for one key]}.

--print-token prints the token alone, for a script that needs no pipe:

  token=$(redlock acquire --print-token --wait 10s nightly) || exit
  trap 'redlock release nightly "$token"' EXIT

extend, release and check take the permit's key that acquire printed, or
KEY and the token, and then find the permit the token holds: among the N
permits with the same --limit N; without --limit, among every permit a
semaphore may have, once the token turned out to hold KEY itself on no
node, and nobody else to hold KEY:

  token=$(redlock acquire --limit 5 --print-token --wait 10s api) || exit
  trap 'redlock release --limit 5 api "$token"' EXIT

A reader of the table "orders", among others, while no writer has it:

  token=$(redlock acquire --shared --print-token --wait 10s orders) || exit
  trap 'redlock release orders "$token"' EXIT

For several keys, --print-token prints the tokens on one line, separated
by spaces, in the order of the keys. Both accounts, or neither:

  tokens=$(redlock acquire --print-token --wait 10s acct-17 acct-42) || exit
  read -r t17 t42 <<< "$tokens"
  trap 'redlock release acct-17 "$t17"; redlock release acct-42 "$t42"' EXIT

Waiting (any --wait but 0), it says on stderr why, every few seconds when
the reason changes and every 30s otherwise: who holds the lock (or that all
the permits are held), which nodes are recovering or do not answer. When
--wait passes, the exit status is that of the last reason. As with flock,
-n is --wait 0 and -w SECONDS is --wait; --wait, --ttl and
--recovery-delay take a bare number as seconds. A standard output on
/dev/null, or closed (which a Go program finds on /dev/null), discards the
tokens: acquire then warns that the locks stay held until their TTL.`,
		exits: []exitDoc{
			{"0", "acquired"},
			docUsage,
			docUnavailable,
			{code(exitIOError), "acquired, but the tokens could not be written to standard output (full, a pipe nobody reads): released again"},
			{code(exitConflict), "not acquired: held by another holder, or readers, or, for --shared, a writer is waiting"},
			docConfig,
			docInterrupted,
		},
		setup: setupAcquire,
	}
}

// acquiredJSON is acquire's JSON output. Key is the key the token holds:
// with --limit, the permit's.
type acquiredJSON struct {
	Key        string    `json:"key"`
	Permit     int       `json:"permit,omitempty"` // with --limit: the permit's number
	Limit      int       `json:"limit,omitempty"`  // with --limit: the number of permits
	Shared     bool      `json:"shared,omitempty"` // with --shared: a reader
	Token      string    `json:"token"`
	Fence      uint64    `json:"fence"`
	TTLMs      int64     `json:"ttl_ms"`
	Deadline   string    `json:"deadline"`
	ValidityMs int64     `json:"validity_ms"`
	until      time.Time // the validity deadline, which the output renders
}

func setupAcquire(fs *flag.FlagSet) runner {
	var nodes nodeFlags
	nodes.register(fs, true, true)
	var lf lockFlags
	lf.registerLimit(fs, "take one of `N` permits of the semaphore KEY instead of the lock KEY, from 1 to "+
		strconv.Itoa(redlock.MaxLimit)+"; the key printed is the permit's")
	lf.registerShared(fs, sharedUsage)
	lf.registerOwner(fs)
	lf.registerLockDelay(fs)
	wait := waitForever
	registerWait(fs, &wait)
	asJSON := fs.Bool("json", false, "print one JSON object, also on failure")
	tokenOnly := fs.Bool("print-token", false, "print the token alone, on one line; for several keys, the tokens, separated by spaces")
	return func(ctx context.Context, s streams, args []string) int {
		r := report{s: s, cmd: "acquire", json: *asJSON}
		if *asJSON && *tokenOnly {
			return r.usage("--json and --print-token print different things: give one")
		}
		if msg := keyArgs(args); msg != "" {
			return r.usage(msg)
		}
		keys := args
		r.setKeys(keys)
		if msg := lf.conflict(len(keys)); msg != "" {
			return r.usage(msg)
		}
		if msg := lf.delayConflict(&nodes); msg != "" {
			return r.usage(msg)
		}
		start := time.Now()
		if wait >= 0 {
			nodes.checkBy = start.Add(time.Duration(wait))
		}
		client, f, err := nodes.dial(ctx, s.stderr)
		if err != nil {
			return r.failedAs(f, err)
		}
		defer nodes.close(client)
		w := waiting{client: client, keys: keys, limit: int(lf.limit), shared: lf.shared, wait: wait,
			stderr: s.stderr, cmd: "acquire", opts: lf.options(), note: nodes.unsetNote(), start: start}
		held, err := w.acquire(ctx)
		if err != nil {
			f := classify(err)
			if ctx.Err() != nil {
				f = failInterrupted
			}
			return r.failedAs(f, err)
		}
		var outs []acquiredJSON
		for _, lock := range locksOf(keys, held) {
			out := acquiredJSON{Key: lock.Key(), Shared: lf.shared, Token: lock.Token(), Fence: lock.Fence(),
				TTLMs: nodes.ttl.Milliseconds(), until: lock.Until()}
			if lf.limited() {
				out.Permit, out.Limit = permitNumber(keys[0], lock.Key()), int(lf.limit)
			}
			outs = append(outs, out)
		}
		return handOver(ctx, s, keys, held, func(w io.Writer) { writeAcquiredAll(w, keys, outs, *tokenOnly, *asJSON) })
	}
}

// handOver writes what acquire took, as write puts it, to stdout in one
// piece, and returns exitOK. When stdout refuses it (closed, full, a pipe
// whose reader left), nobody has the tokens: it releases held, says so, and
// returns exitIOError, rather than leave the keys locked for their TTL.
func handOver(ctx context.Context, s streams, keys []string, held holding, write func(io.Writer)) int {
	var out bytes.Buffer
	write(&out)
	if onDevNull(s.stdout) {
		sayf(s.stderr, slog.LevelWarn, "acquire", "standard output is /dev/null, or was closed: nobody receives the tokens, and %s stays held until its TTL ends ('redlock release --force' frees it sooner)",
			heldName(keys, held))
	}
	stopPipe := catchSIGPIPE()
	_, err := s.stdout.Write(out.Bytes())
	stopPipe()
	if err == nil {
		return exitOK
	}
	if rerr := held.Release(context.WithoutCancel(ctx)); rerr != nil {
		sayf(s.stderr, slog.LevelError, "acquire", "could not write the tokens to stdout: %v; %s not released either: %v", err, heldName(keys, held), rerr)
	} else {
		sayf(s.stderr, slog.LevelError, "acquire", "could not write the tokens to stdout: %v; %s released", err, heldName(keys, held))
	}
	return exitIOError
}

// onDevNull reports whether w is /dev/null, where a write succeeds and
// nobody reads: what a Go program finds on a standard stream that was
// closed when it started, as the runtime opens /dev/null there.
func onDevNull(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err == nil && os.SameFile(fi, null)
}

// acquiredSetJSON is acquire's JSON output for several keys: each lock as
// acquire prints one, in the order of the keys.
type acquiredSetJSON struct {
	Keys  []string       `json:"keys"`
	Locks []acquiredJSON `json:"locks"`
}

// writeAcquiredAll prints the locks acquire took, outs[i] of keys[i]: their
// tokens alone, on one line separated by spaces, with tokenOnly; else one
// JSON object with asJSON, a lock's of one key or an acquiredSetJSON of
// several; else each lock's fields, the locks separated by an empty line.
func writeAcquiredAll(w io.Writer, keys []string, outs []acquiredJSON, tokenOnly, asJSON bool) {
	switch {
	case tokenOnly:
		tokens := make([]string, len(outs))
		for i, out := range outs {
			tokens[i] = out.Token
		}
		fmt.Fprintln(w, strings.Join(tokens, " "))
		return
	case asJSON:
		for i := range outs {
			outs[i].Deadline, outs[i].ValidityMs = formatTime(outs[i].until), time.Until(outs[i].until).Milliseconds()
		}
		if len(outs) == 1 {
			writeJSON(w, outs[0])
			return
		}
		writeJSON(w, acquiredSetJSON{Keys: keys, Locks: outs})
		return
	}
	for i, out := range outs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		writeAcquired(w, out)
	}
}

// writeAcquired prints what acquire took, one field per line.
func writeAcquired(w io.Writer, out acquiredJSON) {
	fmt.Fprintf(w, "key       %s\n", shown(out.Key))
	if out.Limit > 0 {
		fmt.Fprintf(w, "permit    %d of %d\n", out.Permit, out.Limit)
	}
	if out.Shared {
		fmt.Fprintf(w, "shared    yes, a reader\n")
	}
	fmt.Fprintf(w, "token     %s\nfence     %d\ndeadline  %s (valid for %s)\n",
		out.Token, out.Fence, formatTime(out.until), time.Until(out.until).Round(time.Millisecond))
}

// limitByTokenUsage describes --limit for the verbs that act on a token.
var limitByTokenUsage = "KEY names a semaphore of `N` permits, one of which TOKEN holds: act on that permit, " +
	"found by reading the N; without it, KEY is the key TOKEN holds (a permit's, as acquire printed it), or, " +
	"when TOKEN holds KEY on no node and nobody holds KEY, the semaphore KEY, whose permit TOKEN holds is found " +
	"by reading every permit a semaphore may have (" + strconv.Itoa(redlock.MaxLimit) + ", all at once)"

func extendCommand() *command {
	return &command{
		name:       "extend",
		jsonReport: true,
		synopsis:   "[flags] KEY TOKEN",
		summary:    "extend a lock taken with 'redlock acquire'",
		about: `
Resets the time-to-live of the lock KEY held by TOKEN on every node that
still holds it, to --ttl when given, else to the TTL the lock was acquired
with, and prints the new validity deadline when a majority did; a lock
acquired with --lock-delay keeps its delay, which TOKEN carries. Extend well
before the deadline 'acquire' printed: once it passes, another holder may
have the lock. A --ttl shorter than the time the lock has left shortens
it: whoever holds TOKEN must go by the deadline printed here, not by an
earlier one.

A permit of a semaphore is extended by its key, KEY:permit:i as acquire
printed it, or by KEY: given the --limit N it was acquired with, extend
reads those N permits for the one TOKEN holds; without --limit, it reads
every permit a semaphore may have once TOKEN turned out to hold KEY itself
on no node, and nobody else to hold KEY. A reader
(acquire --shared) is extended by KEY and its token, as a writer is; the
other readers keep their own deadlines.

Output: "extended KEY until DEADLINE (valid for D)", or with --json
{"key", "deadline", "validity_ms"}; KEY is the permit's for a permit.`,
		exits: []exitDoc{
			{"0", "extended"},
			docUsage,
			docUnavailable,
			{code(exitLockLost), "TOKEN no longer holds the lock: it expired or was taken over; stop using it"},
			docTakenOver,
			docConfig,
		},
		setup: setupExtend,
	}
}

// extendConflict says what is wrong with extending token with the node
// flags n, and returns "" when nothing is: the TTL the extension sets
// (--ttl when withTTL, else the one the token was acquired with) plus the
// lock-delay the token keeps must stay within --recovery-delay. A --ttl
// above it alone is the node flags' own error (nodeFlags.check).
func extendConflict(n *nodeFlags, token string, withTTL bool) string {
	info, _ := wire.ParseToken(token)
	ttl, what := n.ttl, fmt.Sprintf("--ttl %s", n.ttl)
	switch {
	case withTTL && info.Delay <= 0:
		return ""
	case !withTTL && info.TTL == 0:
		return "" // another library's token: extended by the client's TTL, within the delay
	case !withTTL:
		ttl, what = info.TTL, fmt.Sprintf("the token's TTL %s", info.TTL)
	}
	if info.Delay > 0 {
		what += fmt.Sprintf(" plus the token's lock-delay %s", info.Delay)
	}
	if ttl+max(info.Delay, 0) <= n.recoveryDelay {
		return ""
	}
	return fmt.Sprintf("%s is above --recovery-delay %s: a node that restarted without its data could grant "+
		"the lock before it ends; extend it with a shorter --ttl, or raise --recovery-delay to at least %s "+
		"on every client of these nodes together", what, n.recoveryDelay, ttl+info.Delay)
}

// extendedJSON is extend's JSON output.
type extendedJSON struct {
	Key        string `json:"key"`
	Deadline   string `json:"deadline"`
	ValidityMs int64  `json:"validity_ms"`
}

func setupExtend(fs *flag.FlagSet) runner {
	var nodes nodeFlags
	nodes.register(fs, true, false)
	var lf lockFlags
	lf.registerLimit(fs, limitByTokenUsage)
	asJSON := fs.Bool("json", false, "print one JSON object, also on failure")
	return func(ctx context.Context, s streams, args []string) int {
		r := report{s: s, cmd: "extend", json: *asJSON}
		if msg := positional(args, "KEY", "TOKEN"); msg != "" {
			return r.usage(msg)
		}
		key, token := args[0], args[1]
		r.key = key
		withTTL := setFlags(fs)["ttl"]
		if msg := extendConflict(&nodes, token, withTTL); msg != "" {
			return r.usage(msg)
		}
		client, f, err := nodes.dial(ctx, s.stderr)
		if err != nil {
			return r.failedAs(f, err)
		}
		defer nodes.close(client)
		var ttl time.Duration // the TTL the token was acquired with
		if withTTL {
			ttl = nodes.ttl
		}
		if key, err = lf.target(ctx, client, key, token); err != nil {
			return r.failed(err)
		}
		key, until, err := extendToken(ctx, client, &lf, key, token, ttl)
		r.key = key
		if err != nil {
			return r.failed(err)
		}
		validity := time.Until(until)
		if *asJSON {
			writeJSON(s.stdout, extendedJSON{Key: key, Deadline: formatTime(until), ValidityMs: validity.Milliseconds()})
			return exitOK
		}
		fmt.Fprintf(s.stdout, "extended %s until %s (valid for %s)\n", shown(key), formatTime(until), validity.Round(time.Millisecond))
		return exitOK
	}
}

// extendToken extends the lock key by token to ttl (0: the token's TTL),
// and returns the key it extended: key, or, when no node extended key,
// token holds it on none and nobody holds it, the permit of the semaphore
// key that token holds (see lockFlags.permitHeld).
func extendToken(ctx context.Context, client *redlock.Client, lf *lockFlags, key, token string, ttl time.Duration) (string, time.Time, error) {
	until, err := client.ExtendToken(ctx, key, token, ttl)
	if !extendedNowhere(err) {
		return key, until, err
	}
	res, checkErr := client.Check(ctx, key, token)
	permit, ok := lf.permitHeld(ctx, client, key, token, res, checkErr)
	if !ok {
		return key, until, err
	}
	until, err = client.ExtendToken(ctx, permit, token, ttl)
	return permit, until, err
}

// extendedNowhere reports whether err, an extension's failure, says that
// no node extended the lock, its token held on none that answered, or too
// few answered; and that it was not forced free.
func extendedNowhere(err error) bool {
	var qe *redlock.QuorumError
	return (errors.Is(err, redlock.ErrLockLost) || errors.Is(err, redlock.ErrNotExtended)) &&
		!errors.Is(err, redlock.ErrTakenOver) && errors.As(err, &qe) && qe.OK == 0
}

func releaseCommand() *command {
	return &command{
		name:       "release",
		jsonReport: true,
		synopsis:   "[flags] KEY TOKEN | --force KEY",
		summary:    "release a lock taken with 'redlock acquire'; --force frees any lock, without its token",
		about: `
Deletes the lock KEY on every node where TOKEN still holds it, and never
another holder's lock. A permit of a semaphore is released by its key,
KEY:permit:i as acquire printed it, or by KEY, with the --limit N it was
acquired with or without --limit, found as extend finds it. A reader
(acquire --shared) is released by KEY and its token: the other readers
keep KEY shared, and a writer gets it once the last reader is gone.

Output: "released KEY", or with --json {"key", "released": true}; KEY is
the permit's for a permit. When TOKEN held the lock on no node that
answered, the exit status is 76 and the message says whether another holder
has the lock (a wrong token, or this one expired and was taken over) or
nobody does (released already, or expired): either way, work done under a
lock that had expired may have overrun its validity; 77 when an operator
forced it free. The nodes are asked first whether TOKEN holds the lock on a
majority of them (as 'redlock check' does, one round trip more): when it
holds it on some, fewer than a majority, they are released all the same,
and the exit status is 76 too, as the lock was lost before the release.

With --force, KEY alone: frees the lock KEY in one step whoever holds it
(a writer, all its readers, or the permit KEY:permit:i), as an operator
does for a stuck lock. Each node keeps a record of who forced it (--by)
until the lock would have expired; the holder learns at its next
extension that an operator took the lock over ('redlock run' stops its
command and exits 77; extend and release of its token exit 77), and the
clients waiting for KEY are woken at once. Forcing a lock free is as
unsafe as a lock that expires under its holder: until its next extension
it may still act, so protect the resource with the fencing token. A KEY
that holds other data than a lock (another program's hash, list...) is
left as it is: the exit status is 78 when it does on so many nodes that
no majority can free the lock. Output:
"forced KEY free, held by OWNER since TIME" (a line per holder), or with
--json {"key", "released": true, "forced_by", "grants": [{"token",
"owner", "since", "age_ms"}]}.`,
		exits: []exitDoc{
			{"0", "released (with --force: freed)"},
			docUsage,
			docUnavailable,
			{code(exitLockLost), "TOKEN held the lock on fewer than a majority of the nodes (released where it did): released already, expired, or another holder's; with --force, nobody held KEY"},
			docTakenOver,
			docConfig,
		},
		setup: setupRelease,
	}
}

// releasedJSON is release's JSON output.
type releasedJSON struct {
	Key      string      `json:"key"`
	Released bool        `json:"released"`
	ForcedBy string      `json:"forced_by,omitempty"` // --force: who forced it
	Grants   []grantJSON `json:"grants,omitempty"`    // --force: the holders taken off
}

func setupRelease(fs *flag.FlagSet) runner {
	var nodes nodeFlags
	nodes.register(fs, false, false)
	var lf lockFlags
	lf.registerLimit(fs, limitByTokenUsage)
	asJSON := fs.Bool("json", false, "print one JSON object, also on failure")
	var force forceFlags
	force.register(fs)
	return func(ctx context.Context, s streams, args []string) int {
		r := report{s: s, cmd: "release", json: *asJSON}
		if force.force {
			return forceRelease(ctx, r, &nodes, &lf, force.by, args)
		}
		if msg := positional(args, "KEY", "TOKEN"); msg != "" {
			return r.usage(msg)
		}
		key, token := args[0], args[1]
		r.key = key
		client, f, err := nodes.dial(ctx, s.stderr)
		if err != nil {
			return r.failedAs(f, err)
		}
		defer nodes.close(client)
		if key, err = lf.target(ctx, client, key, token); err != nil {
			return r.failed(err)
		}
		held, checkErr := client.Check(ctx, key, token)
		if permit, ok := lf.permitHeld(ctx, client, key, token, held, checkErr); ok {
			key = permit
			held, checkErr = client.Check(ctx, key, token)
		}
		r.key = key
		if err := client.ReleaseToken(ctx, key, token); err != nil {
			if errors.Is(err, redlock.ErrNotHeld) {
				err = notHeldBy(ctx, client, key, token, err)
			}
			return r.failed(err)
		}
		if checkErr == nil && !held.Current {
			return r.failed(heldByTooFew(held))
		}
		if *asJSON {
			writeJSON(s.stdout, releasedJSON{Key: key, Released: true})
			return exitOK
		}
		fmt.Fprintf(s.stdout, "released %s\n", shown(key))
		return exitOK
	}
}

// errHeldByAnother, errHeldByReaders and errHeldByNobody say why a
// release found its token on no node.
var (
	errHeldByAnother = errors.New("another holder has the lock: a wrong token, or this one expired and was taken over")
	errHeldByReaders = errors.New("other readers hold the lock shared: a wrong token, or this one released already or expired")
	errHeldByNobody  = errors.New("nobody holds the lock: released already, or it expired")
	errForcedFree    = fmt.Errorf("%w: an operator forced it free with 'redlock release --force' ('redlock inspect KEY' says who)", redlock.ErrTakenOver)
)

// heldByTooFew is the error of a release whose token held the lock on some
// nodes, fewer than a quorum, as Check found just before: the lock was
// lost before the release, which deleted it where it still stood.
func heldByTooFew(held redlock.CheckResult) error {
	return fmt.Errorf("%w: the token held the lock on %d of %d nodes, fewer than a majority, and was released there: "+
		"the lock was lost before this release (it expired on the others, or they restarted or were flushed without it), "+
		"so work done under it may have overrun it", redlock.ErrLockLost, held.Nodes, held.All)
}

// notHeldBy explains err, a release of key by token that found the token
// on no node, by whether another token, or other readers, hold the lock
// now.
func notHeldBy(ctx context.Context, client *redlock.Client, key, token string, err error) error {
	states, ierr := client.Inspect(ctx, key)
	if ierr != nil {
		return err
	}
	readers := false
	for _, st := range states {
		if st.Err == nil && slices.Contains(st.ForcedTokens, token) {
			return fmt.Errorf("%w: %w", err, errForcedFree)
		}
		if st.Err == nil && st.Holder != "" && st.Holder != token {
			return fmt.Errorf("%w: %w", err, errHeldByAnother)
		}
		readers = readers || (st.Err == nil && len(st.Readers) > 0)
	}
	if readers {
		return fmt.Errorf("%w: %w", err, errHeldByReaders)
	}
	return fmt.Errorf("%w: %w", err, errHeldByNobody)
}
