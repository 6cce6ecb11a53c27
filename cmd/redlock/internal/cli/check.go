package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-go/redlock"
)

func checkCommand() *command {
	return &command{
		name:       "check",
		jsonReport: true,
		synopsis:   "[flags] KEY TOKEN|FENCE",
		summary:    "say whether TOKEN (or the fencing token FENCE) is the current holder of KEY, by a majority",
		about: `
Asks every node whether the lock KEY is still held by TOKEN (as its writer
or one of its readers), or, given a number, by the writer whose fencing
token is FENCE: Chubby's sequencer check, for a resource server that can
reach the nodes and wants to refuse a stale holder before it acts. It
changes nothing. Readers share the fencing counter with the writers, so a
reader (--shared) is checked by its TOKEN, not by its FENCE. A permit of a
semaphore (acquire --limit N) is checked by its key, KEY:permit:i, or by
KEY and its TOKEN, as extend finds it: with --limit N, or without when
TOKEN holds KEY itself on no node and nobody holds KEY; KEY in the output
is then the permit's. Its FENCE, counted per permit, goes with its key.

The answer describes the nodes at some instant during the check: the lock
may end, and another client take it, right after. It narrows the window in
which a stale holder can act, it does not close it: what the resource does
after a "current" answer may happen under a newer holder for as long as
the check took plus the time the resource takes to act (plus the drift
between clocks). Act at once; where the resource can keep the highest
fencing token it saw, compare fencing tokens instead, or as well.

Output: "current: ..." or "not current: ..." with who holds KEY now, its
fencing token, on how many nodes, and how long the check took; when
nobody holds KEY and it holds other data than a lock (another program's
hash, list...), the type of that data and on how many nodes: not current.
With --json one object: {"key", "current", "holder", "owner", "since",
"fence", "shared", "data", "data_nodes", "holding", "answered", "all",
"took_ms"}; "shared" when readers hold KEY on a majority; "data" the type
of the data that is no lock ("hash", "list", ...) on the most nodes, and
"data_nodes" on how many nodes KEY holds such data, "" and 0 when none;
not current, "reason": "lost" and "exit_code": 76 too, as a failure's.`,
		exits: []exitDoc{
			{"0", "current: a majority of the nodes hold KEY with TOKEN (or FENCE)"},
			docUsage,
			docUnavailable,
			{code(exitLockLost), "not current: TOKEN (or FENCE) does not hold KEY on a majority, or KEY holds other data than a lock; refuse it"},
			docConfigShown,
		},
		setup: setupCheck,
	}
}

// checkJSON is check's JSON output.
type checkJSON struct {
	Key       string `json:"key"`
	Current   bool   `json:"current"`
	Holder    string `json:"holder"` // the writer a majority holds KEY with, "" if none
	Owner     string `json:"owner"`
	Since     string `json:"since"`
	Fence     uint64 `json:"fence"`
	Shared    bool   `json:"shared"`     // readers hold KEY on a majority
	Data      string `json:"data"`       // the type of the data that is no lock under KEY on the most nodes ("hash", ...), "" if none
	DataNodes int    `json:"data_nodes"` // nodes where KEY holds such data: another program's key
	Holding   int    `json:"holding"`    // nodes that hold KEY with TOKEN or FENCE
	Answered  int    `json:"answered"`
	All       int    `json:"all"`
	TookMs    int64  `json:"took_ms"`
	// Reason and ExitCode say, for a token that is not current, what a
	// failure's would (see failureJSON): lost, 76. Absent when current.
	Reason   failure `json:"reason,omitempty"`
	ExitCode int     `json:"exit_code,omitempty"`
}

func setupCheck(fs *flag.FlagSet) runner {
	var nodes nodeFlags
	nodes.register(fs, false, false)
	nodes.readOnly = true
	var lf lockFlags
	lf.registerLimit(fs, limitByTokenUsage)
	asJSON := fs.Bool("json", false, "print one JSON object, also on failure")
	return func(ctx context.Context, s streams, args []string) int {
		r := report{s: s, cmd: "check", json: *asJSON}
		if msg := positional(args, "KEY", "TOKEN|FENCE"); msg != "" {
			return r.usage(msg)
		}
		key, held := args[0], args[1]
		r.key = key
		fence, perr := strconv.ParseUint(held, 10, 64)
		switch {
		case errors.Is(perr, strconv.ErrRange):
			return r.usage(fmt.Sprintf("the fencing token %s is out of range: fencing tokens are below 2^63", held))
		case perr == nil && fence == 0:
			return r.usage("the fencing token is 0, which no lock has")
		case perr == nil && lf.limited():
			return r.usage("--limit goes with a TOKEN: each permit has fencing tokens of its own, so a permit's FENCE is checked with the permit's key, KEY:permit:i")
		}
		client, f, err := nodes.dial(ctx, s.stderr)
		if err != nil {
			return r.failedAs(f, err)
		}
		defer nodes.close(client)
		var res redlock.CheckResult
		if perr == nil {
			res, err = client.CheckFence(ctx, key, fence)
		} else {
			key, res, err = checkToken(ctx, client, &lf, key, held)
			r.key = key
		}
		if err != nil && !res.Current {
			// Too few nodes answered: nothing was decided, and the
			// failure says so, as every verb's does.
			return r.failed(err)
		}
		var data otherKinds
		if !res.Current && res.Holder.Token == "" && !res.Shared {
			data = otherKindsOf(ctx, client, key)
		}
		writeCheck(r, key, held, res, data)
		if res.Current {
			return exitOK
		}
		return exitLockLost
	}
}

// checkToken checks whether token holds the lock key, and returns the key
// it checked: key; with --limit, the permit of the semaphore key that token
// holds, or key when it holds none, which the check then finds it does not
// hold; without it, when token holds key on no node and nobody holds it,
// the permit of the semaphore key that token holds (see
// lockFlags.permitHeld).
func checkToken(ctx context.Context, client *redlock.Client, lf *lockFlags, key, token string) (string, redlock.CheckResult, error) {
	permit, err := lf.target(ctx, client, key, token)
	switch {
	case err == nil:
		key = permit
	case !errors.Is(err, redlock.ErrNotHeld):
		return key, redlock.CheckResult{}, err
	}
	res, err := client.Check(ctx, key, token)
	if permit, ok := lf.permitHeld(ctx, client, key, token, res, err); ok {
		key = permit
		res, err = client.Check(ctx, key, token)
	}
	return key, res, err
}

// otherKinds is the data other than a lock that nodes keep under a key:
// its types, on the most nodes first, and on how many nodes.
type otherKinds struct {
	kinds []string
	nodes int
}

// otherKindsOf reads what the nodes keep under key, for a check that
// found it held by nobody, and returns the data that is no lock there;
// none when the nodes cannot be read.
func otherKindsOf(ctx context.Context, client *redlock.Client, key string) otherKinds {
	states, err := lookAgain(ctx, client, key)
	if err != nil {
		return otherKinds{}
	}
	var o otherKinds
	count := map[string]int{}
	for _, st := range states {
		if st.Err != nil || st.Data == "" {
			continue
		}
		if count[st.Data] == 0 {
			o.kinds = append(o.kinds, st.Data)
		}
		count[st.Data]++
		o.nodes++
	}
	slices.SortStableFunc(o.kinds, func(a, b string) int { return count[b] - count[a] })
	return o
}

// main returns the type on the most nodes, "" when none.
func (o otherKinds) main() string {
	if len(o.kinds) == 0 {
		return ""
	}
	return o.kinds[0]
}

// writeCheck prints check's answer for held, a token or a fencing token,
// with data, what KEY holds that is no lock when nobody holds it.
func writeCheck(r report, key, held string, res redlock.CheckResult, data otherKinds) {
	if r.json {
		out := checkJSON{Key: key, Current: res.Current, Holder: res.Holder.Token, Owner: res.Holder.Owner, Since: sinceText(res.Holder.Since),
			Fence: res.Fence, Shared: res.Shared, Data: data.main(), DataNodes: data.nodes,
			Holding: res.Nodes, Answered: res.Answered, All: res.All, TookMs: res.Took.Milliseconds()}
		if !res.Current {
			out.Reason, out.ExitCode = failLost, exitLockLost
		}
		writeJSON(r.s.stdout, out)
		return
	}
	took := res.Took.Round(time.Microsecond)
	_, byFence := strconv.ParseUint(held, 10, 64)
	quoted := strconv.Quote(key)
	key, held = shown(key), shown(held)
	if byFence == nil {
		held = "fence " + held
	}
	switch {
	case res.Current && res.Holder.Token == "":
		// A reader: the fencing counter is the writers'.
		fmt.Fprintf(r.s.stdout, "current: %s holds %s as a reader on %d of %d nodes; checked in %s\n", held, key,
			res.Nodes, res.All, took)
		return
	case res.Current && byFence == nil:
		fmt.Fprintf(r.s.stdout, "current: %s is the holder's, %s, which holds %s on %d of %d nodes%s; checked in %s\n", held,
			shown(res.Holder.Token), key, res.Nodes, res.All, withOwner(res.Holder.Token), took)
		return
	case res.Current:
		fmt.Fprintf(r.s.stdout, "current: %s holds %s on %d of %d nodes (fence %d%s); checked in %s\n", held, key,
			res.Nodes, res.All, res.Fence, withOwner(res.Holder.Token), took)
		return
	}
	now := "nobody holds it on a majority"
	switch {
	case res.Shared:
		now = "readers hold it on a majority (a reader is checked by its token, not by its fencing token)"
	case res.Holder.Token != "":
		now = fmt.Sprintf("held by %s (fence %d%s)", shown(res.Holder.Token), res.Fence, withOwner(res.Holder.Token))
	case data.nodes > 0:
		now += fmt.Sprintf("; %s holds other data than a lock on %d of %d nodes (a %s: another program's key?)",
			quoted, data.nodes, res.All, strings.Join(data.kinds, " or a "))
	}
	fmt.Fprintf(r.s.stdout, "not current: %s holds %s on only %d of %d nodes (%d answered), short of a majority; %s; checked in %s\n",
		held, key, res.Nodes, res.All, res.Answered, now, took)
}
