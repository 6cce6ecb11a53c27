package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redlock-go/redlock"
)

// writeJSON prints v as one line of JSON.
func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// positional checks that args holds exactly the named positional arguments.
func positional(stderr io.Writer, cmd string, args []string, names ...string) ([]string, int) {
	for _, a := range args {
		if strings.HasPrefix(a, "-") && len(a) > 1 && len(args) > len(names) {
			return nil, usageError(stderr, cmd, fmt.Sprintf("flags go before %s; %q came after", names[0], a))
		}
	}
	if len(args) != len(names) {
		return nil, usageError(stderr, cmd, fmt.Sprintf("want %s, got %d argument(s)", strings.Join(names, " "), len(args)))
	}
	return args, exitOK
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

Example:
  token=$(redlock acquire --json --wait 10s nightly | jq -r .token) || exit
  trap 'redlock release nightly "$token"' EXIT`,
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
	return func(ctx context.Context, s streams, args []string) int {
		args, code := positional(s.stderr, "acquire", args, "KEY")
		if code != exitOK {
			return code
		}
		key := args[0]
		client, code := nodes.dial(ctx, s.stderr, "acquire")
		if code != exitOK {
			return code
		}
		defer client.Close()
		lock, err := acquireWaiting(ctx, client, key, wait, noticeRecovering(s.stderr, "acquire"))
		if err != nil {
			f := classify(err)
			if ctx.Err() != nil {
				f = failInterrupted
			}
			if *asJSON {
				out := newFailureJSON(key, err)
				out.Reason = f
				writeJSON(s.stdout, out)
			}
			printFailure(s.stderr, "acquire", err)
			return exitFor(f)
		}
		until := lock.Until()
		if *asJSON {
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
Resets the time-to-live of the lock KEY held by TOKEN to --ttl on every node
that still holds it, and prints the new validity deadline when a majority did.
Extend well before the deadline 'acquire' printed: once it passes, another
holder may have the lock.

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
		args, code := positional(s.stderr, "extend", args, "KEY", "TOKEN")
		if code != exitOK {
			return code
		}
		key, token := args[0], args[1]
		client, code := nodes.dial(ctx, s.stderr, "extend")
		if code != exitOK {
			return code
		}
		defer client.Close()
		until, err := client.ExtendToken(ctx, key, token, nodes.ttl)
		if err != nil {
			if *asJSON {
				writeJSON(s.stdout, newFailureJSON(key, err))
			}
			printFailure(s.stderr, "extend", err)
			return exitFor(classify(err))
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

Output: "released KEY", or with --json {"key", "released": true}. A lock
that had already expired is reported with exit status 76: the work done
under it may have overrun its validity.`,
		exits: []exitDoc{
			{"0", "released"},
			docUsage,
			docUnavailable,
			{code(exitLockLost), "TOKEN held the lock on no node that answered: it had expired"},
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
		args, code := positional(s.stderr, "release", args, "KEY", "TOKEN")
		if code != exitOK {
			return code
		}
		key, token := args[0], args[1]
		client, code := nodes.dial(ctx, s.stderr, "release")
		if code != exitOK {
			return code
		}
		defer client.Close()
		if err := client.ReleaseToken(ctx, key, token); err != nil {
			if *asJSON {
				writeJSON(s.stdout, newFailureJSON(key, err))
			}
			if errors.Is(err, redlock.ErrNotHeld) {
				fmt.Fprintf(s.stderr, "redlock release: %q was not held by this token on any node that answered: it had expired\n", key)
			} else {
				printFailure(s.stderr, "release", err)
			}
			return exitFor(classify(err))
		}
		if *asJSON {
			writeJSON(s.stdout, releasedJSON{Key: key, Released: true})
			return exitOK
		}
		fmt.Fprintf(s.stdout, "released %s\n", key)
		return exitOK
	}
}
