package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/redlock-go/redlock"
)

// positional checks that args holds exactly the named positional
// arguments, none of them empty. It returns the usage error, or "".
func positional(args []string, names ...string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "-") && len(a) > 1 && len(args) > len(names) {
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
		name:     "acquire",
		synopsis: "[flags] KEY",
		summary:  "take the lock KEY and print its token, for scripts",
		about: `
Acquires the lock KEY and prints its token, fencing token and validity
deadline. The lock is not renewed: it expires after --ttl unless
'redlock extend KEY TOKEN' extends it, and 'redlock release KEY TOKEN'
releases it. Prefer 'redlock run', which renews and releases by itself.

Output, one field per line (or one JSON object with --json):
  key       KEY
  token     the token; extend and release need it
  fence     the fencing token, to pass to the protected resource
  deadline  the validity deadline, RFC 3339 UTC, and the validity left

--print-token prints the token alone, for a script that needs no pipe:

  token=$(redlock acquire --print-token --wait 10s nightly) || exit
  trap 'redlock release nightly "$token"' EXIT

Waiting (any --wait but 0), it says on stderr why, every few seconds when
the reason changes and every 30s otherwise: who holds the lock, which nodes
are recovering or do not answer. When --wait passes, the exit status is
that of the last reason.`,
		exits: []exitDoc{
			{"0", "acquired"},
			docUsage,
			docUnavailable,
			{code(exitConflict), "not acquired: held by another holder"},
			docConfig,
			docInterrupted,
		},
		setup: setupAcquire,
	}
}

// acquiredJSON is acquire's JSON output.
type acquiredJSON struct {
	Key        string `json:"key"`
	Token      string `json:"token"`
	Fence      uint64 `json:"fence"`
	TTLMs      int64  `json:"ttl_ms"`
	Deadline   string `json:"deadline"`
	ValidityMs int64  `json:"validity_ms"`
}

func setupAcquire(fs *flag.FlagSet) runner {
	var nodes nodeFlags
	nodes.register(fs, true, true)
	wait := waitForever
	fs.Var(&wait, "wait", "how long to wait for the lock, a `duration`: 0 makes one attempt, \"forever\" never gives up")
	asJSON := fs.Bool("json", false, "print one JSON object, also on failure")
	tokenOnly := fs.Bool("print-token", false, "print the token alone, on one line")
	return func(ctx context.Context, s streams, args []string) int {
		r := report{s: s, cmd: "acquire", json: *asJSON}
		if msg := positional(args, "KEY"); msg != "" {
			return r.usage(msg)
		}
		key := args[0]
		r.key = key
		client, f, err := nodes.dial(ctx, s.stderr)
		if err != nil {
			return r.failedAs(f, err)
		}
		defer nodes.close(client)
		w := waiting{client: client, key: key, wait: wait, stderr: s.stderr, cmd: "acquire"}
		lock, err := w.acquire(ctx)
		if err != nil {
			f := classify(err)
			if ctx.Err() != nil {
				f = failInterrupted
			}
			return r.failedAs(f, err)
		}
		until := lock.Until()
		switch {
		case *tokenOnly:
			fmt.Fprintln(s.stdout, lock.Token())
			return exitOK
		case *asJSON:
			writeJSON(s.stdout, acquiredJSON{Key: key, Token: lock.Token(), Fence: lock.Fence(),
				TTLMs: nodes.ttl.Milliseconds(), Deadline: formatTime(until), ValidityMs: time.Until(until).Milliseconds()})
			return exitOK
		}
		fmt.Fprintf(s.stdout, "key       %s\ntoken     %s\nfence     %d\ndeadline  %s (valid for %s)\n",
			key, lock.Token(), lock.Fence(), formatTime(until), time.Until(until).Round(time.Millisecond))
		return exitOK
	}
}

func extendCommand() *command {
	return &command{
		name:     "extend",
		synopsis: "[flags] KEY TOKEN",
		summary:  "extend a lock taken with 'redlock acquire'",
		about: `
Resets the time-to-live of the lock KEY held by TOKEN on every node that
still holds it, to --ttl when given, else to the TTL the lock was acquired
with, and prints the new validity deadline when a majority did. Extend well
before the deadline 'acquire' printed: once it passes, another holder may
have the lock.

Output: "extended KEY until DEADLINE (valid for D)", or with --json
{"key", "deadline", "validity_ms"}.`,
		exits: []exitDoc{
			{"0", "extended"},
			docUsage,
			docUnavailable,
			{code(exitLockLost), "TOKEN no longer holds the lock: it expired or was taken over; stop using it"},
			docConfig,
		},
		setup: setupExtend,
	}
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
	asJSON := fs.Bool("json", false, "print one JSON object, also on failure")
	return func(ctx context.Context, s streams, args []string) int {
		r := report{s: s, cmd: "extend", json: *asJSON}
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
		var ttl time.Duration // the TTL the token was acquired with
		if setFlags(fs)["ttl"] {
			ttl = nodes.ttl
		}
		until, err := client.ExtendToken(ctx, key, token, ttl)
		if err != nil {
			return r.failed(err)
		}
		validity := time.Until(until)
		if *asJSON {
			writeJSON(s.stdout, extendedJSON{Key: key, Deadline: formatTime(until), ValidityMs: validity.Milliseconds()})
			return exitOK
		}
		fmt.Fprintf(s.stdout, "extended %s until %s (valid for %s)\n", key, formatTime(until), validity.Round(time.Millisecond))
		return exitOK
	}
}

func releaseCommand() *command {
	return &command{
		name:     "release",
		synopsis: "[flags] KEY TOKEN",
		summary:  "release a lock taken with 'redlock acquire'",
		about: `
Deletes the lock KEY on every node where TOKEN still holds it, and never
another holder's lock.

Output: "released KEY", or with --json {"key", "released": true}. When TOKEN
held the lock on no node that answered, the exit status is 76 and the
message says whether another holder has the lock (a wrong token, or this
one expired and was taken over) or nobody does (released already, or
expired): either way, work done under a lock that had expired may have
overrun its validity.`,
		exits: []exitDoc{
			{"0", "released"},
			docUsage,
			docUnavailable,
			{code(exitLockLost), "TOKEN held the lock on no node that answered: released already, expired, or another holder's"},
			docConfig,
		},
		setup: setupRelease,
	}
}

// releasedJSON is release's JSON output.
type releasedJSON struct {
	Key      string `json:"key"`
	Released bool   `json:"released"`
}

func setupRelease(fs *flag.FlagSet) runner {
	var nodes nodeFlags
	nodes.register(fs, false, false)
	asJSON := fs.Bool("json", false, "print one JSON object, also on failure")
	return func(ctx context.Context, s streams, args []string) int {
		r := report{s: s, cmd: "release", json: *asJSON}
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
		if err := client.ReleaseToken(ctx, key, token); err != nil {
			if errors.Is(err, redlock.ErrNotHeld) {
				err = notHeldBy(ctx, client, key, token, err)
			}
			return r.failed(err)
		}
		if *asJSON {
			writeJSON(s.stdout, releasedJSON{Key: key, Released: true})
			return exitOK
		}
		fmt.Fprintf(s.stdout, "released %s\n", key)
		return exitOK
	}
}

// errHeldByAnother and errHeldByNobody say why a release found its token
// on no node.
var (
	errHeldByAnother = errors.New("another holder has the lock: a wrong token, or this one expired and was taken over")
	errHeldByNobody  = errors.New("nobody holds the lock: released already, or it expired")
)

// notHeldBy explains err, a release of key by token that found the token
// on no node, by whether another token holds the lock now.
func notHeldBy(ctx context.Context, client *redlock.Client, key, token string, err error) error {
	states, ierr := client.Inspect(ctx, key)
	if ierr != nil {
		return err
	}
	for _, st := range states {
		if st.Err == nil && st.Holder != "" && st.Holder != token {
			return fmt.Errorf("%w: %w", err, errHeldByAnother)
		}
	}
	return fmt.Errorf("%w: %w", err, errHeldByNobody)
}
