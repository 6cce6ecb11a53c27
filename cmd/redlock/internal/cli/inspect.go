package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/redlock-go/redlock"
)

func inspectCommand() *command {
	return &command{
		name:       "inspect",
		jsonReport: true,
		synopsis:   "[flags] KEY [KEY...]",
		summary:    "show each node's holder or readers, TTL, fence counter and state for KEY, or several (or its permits)",
		about: `
Reads, from every node at once and without changing anything, who holds the
lock KEY there (a writer's token, or the readers that hold it shared), its
remaining TTL, the node's fencing counter for KEY, and whether the node is
recovering (sitting out every quorum after losing its data). Then says who
holds the lock: a token held on a majority of nodes, with its owner (the
holder's --owner, by default host:pid) and since when it holds the grant
by the holder's clock, or the readers held on a majority ("held shared
by 3 readers"), each with its owner and since when.

Output: a table with one row per node, its HOLDER a token, "N readers",
or "(TYPE, no lock)" when the key holds another program's data there;
when readers hold KEY, a list of their tokens and how many nodes each is
on; "forced free by WHO at TIME, from TOKEN" when an operator forced it
free (release --force) and the record stands (until the lock would have
expired); then the verdict. With --json one object: {"key", "quorum", "holder",
"owner", "since", "age_ms", "readers", "reader_grants", "nodes": [{"node",
"holder", "owner", "since", "readers", "reader_grants", "ttl_ms", "fence",
"recovering", "recovering_left_ms", "no_marker", "forced_by",
"forced_at", "data", "error"}]}; "forced_by" and "forced_at", when an
operator forced the lock free (release --force) since, say who and when;
"data", the type of data the key holds on the node when it is no lock
("hash", "list", ...: another program's key). "owner" and
"since" (RFC 3339, UTC) are "" for a token that does not carry them
(another library's); "reader_grants" are [{"token", "owner", "since",
"age_ms"}], one per token in "readers". "holder" is ""
when no token holds a majority; "readers" are the tokens of the readers
(run --shared, acquire --shared): at the top those held on a majority, per
node those on the node, [] when none. "ttl_ms" is the TTL of the node's
lock key, for readers that of the last to expire, -1 for a key without
expiry, which no lock client writes.

Several keys: 'inspect K1 K2 K3' shows each lock as above, one after the
other in the order given, separated by an empty line; with --json one
object, {"keys": [KEY...], "locks": [one object per key, as for one key]}.
The exit status is 69 when fewer than a majority answered for some key.
--limit takes one key only.

With --limit N it reads the N permits of the semaphore KEY, the locks
KEY:permit:1 to KEY:permit:N, and prints a row per permit (its key, the
holder, its owner and since when, the holder's TTL, the highest fence
counter, and whether a majority holds it), a line per node that failed or is recovering, then "k of N
permits held". With --json: {"key", "limit", "quorum", "held", "unknown"
(permits too few nodes answered for), "permits": [one object per permit,
as above]}. The exit status is 69 when fewer than
a majority answered for some permit.`,
		exits: []exitDoc{
			{"0", "a majority of the nodes answered"},
			docUsage,
			{code(exitUnavailable), "fewer than a majority of the nodes answered (for some key, or some permit)"},
			docConfigShown,
		},
		setup: setupInspect,
	}
}

// nodeStateJSON is one node in inspect's JSON output.
type nodeStateJSON struct {
	Node             string      `json:"node"`
	Holder           string      `json:"holder"`
	Owner            string      `json:"owner"`         // the holder's, "" when its token does not say
	Since            string      `json:"since"`         // when the holder's grant began, "" when its token does not say
	Readers          []string    `json:"readers"`       // tokens of the readers holding it there
	ReaderGrants     []grantJSON `json:"reader_grants"` // each reader's owner and since, as in readers
	TTLMs            int64       `json:"ttl_ms"`
	DelayOnly        bool        `json:"delay_only,omitempty"` // the holder's or every reader's TTL ran out there: only a lock-delay keeps the key
	Fence            uint64      `json:"fence"`
	Recovering       bool        `json:"recovering"`
	RecoveringLeftMs int64       `json:"recovering_left_ms"`
	NoMarker         bool        `json:"no_marker"`
	ForcedBy         string      `json:"forced_by,omitempty"` // who last forced the lock free there (release --force)
	ForcedAt         string      `json:"forced_at,omitempty"`
	Data             string      `json:"data,omitempty"` // the type of data the key holds there when it is no lock ("hash", ...)
	Error            string      `json:"error,omitempty"`
}

// inspectJSON is inspect's JSON output.
type inspectJSON struct {
	Key          string          `json:"key"`
	Quorum       int             `json:"quorum"`
	Holder       string          `json:"holder"`
	Owner        string          `json:"owner"`         // the holder's, "" when its token does not say
	Since        string          `json:"since"`         // when the holder's grant began
	AgeMs        int64           `json:"age_ms"`        // how long ago, by this host's clock
	Readers      []string        `json:"readers"`       // readers holding it on a quorum, sorted
	ReaderGrants []grantJSON     `json:"reader_grants"` // each reader's owner and since, as in readers
	Nodes        []nodeStateJSON `json:"nodes"`
	// Error, Reason and ExitCode are a failure's (see failureJSON), when
	// too few nodes answered to tell who holds the lock; else absent.
	Error    string  `json:"error,omitempty"`
	Reason   failure `json:"reason,omitempty"`
	ExitCode int     `json:"exit_code,omitempty"`
}

func setupInspect(fs *flag.FlagSet) runner {
	var nodes nodeFlags
	nodes.register(fs, false, false)
	nodes.readOnly = true
	var lf lockFlags
	lf.registerLimit(fs, "show the `N` permits of the semaphore KEY, and how many are held, instead of the lock KEY")
	asJSON := fs.Bool("json", false, "print one JSON object, also on failure")
	return func(ctx context.Context, s streams, args []string) int {
		r := report{s: s, cmd: "inspect", json: *asJSON}
		if msg := keyArgs(args); msg != "" {
			return r.usage(msg)
		}
		keys := args
		r.setKeys(keys)
		if msg := lf.conflict(len(keys)); msg != "" {
			return r.usage(msg)
		}
		client, f, err := nodes.dial(ctx, s.stderr)
		if err != nil {
			return r.failedAs(f, err)
		}
		defer nodes.close(client)
		if lf.limited() {
			return inspectSemaphore(ctx, r, client, keys[0], int(lf.limit))
		}
		return inspectLocks(ctx, r, client, keys)
	}
}

// inspectSetJSON is inspect's JSON output for several keys: each lock as
// inspect shows one, in the order of the keys.
type inspectSetJSON struct {
	Keys  []string      `json:"keys"`
	Locks []inspectJSON `json:"locks"`
	// Error, Reason and ExitCode are a failure's (see failureJSON), when
	// too few nodes answered for some key; else absent.
	Error    string  `json:"error,omitempty"`
	Reason   failure `json:"reason,omitempty"`
	ExitCode int     `json:"exit_code,omitempty"`
}

// inspectLocks shows what every node holds for each lock of keys, one
// after the other, and returns the exit code: exitUnavailable when too few
// nodes answered for some key.
func inspectLocks(ctx context.Context, r report, client *redlock.Client, keys []string) int {
	all := make([][]redlock.NodeState, len(keys))
	for i, key := range keys {
		states, err := client.Inspect(ctx, key)
		if err != nil {
			r.key = key
			return r.failed(err)
		}
		all[i] = states
	}
	code := exitOK
	set := inspectSetJSON{Keys: keys}
	for i, key := range keys {
		quorum := len(all[i])/2 + 1
		holder, _, answered := verdict(all[i], quorum)
		lock := lockStateJSON(key, quorum, holder, all[i])
		if answered < quorum {
			code = exitUnavailable
			lock.Error = fmt.Sprintf("too few nodes answered: %d of %d, %d needed", answered, len(all[i]), quorum)
			lock.Reason, lock.ExitCode = failUnavailable, exitUnavailable
		}
		set.Locks = append(set.Locks, lock)
		if !r.json {
			if i > 0 {
				fmt.Fprintln(r.s.stdout)
			}
			writeLock(r.s.stdout, key, all[i])
		}
	}
	switch {
	case r.json && len(keys) == 1:
		writeJSON(r.s.stdout, set.Locks[0])
	case r.json:
		for _, l := range set.Locks {
			if l.Error != "" && set.Error == "" {
				set.Error, set.Reason, set.ExitCode = l.Key+": "+l.Error, l.Reason, l.ExitCode
			}
		}
		writeJSON(r.s.stdout, set)
	}
	return code
}

// writeLock prints what every node holds for the lock key, the readers
// that hold it, and who holds it.
func writeLock(w io.Writer, key string, states []redlock.NodeState) {
	quorum := len(states)/2 + 1
	holder, holding, answered := verdict(states, quorum)
	writeStates(w, key, states)
	writeReaders(w, states)
	writeForced(w, states)
	readers := sharedBy(states, quorum)
	switch {
	case answered < quorum:
		fmt.Fprintf(w, "%d of %d nodes answered, %d needed: nobody can acquire or renew %q now\n",
			answered, len(states), quorum, key)
	case holder != "" && delayKept(states, holder) >= quorum:
		fmt.Fprintf(w, "not held: the TTL of %s ran out; its lock-delay keeps others out on %d of %d nodes%s\n",
			shown(holder), delayKept(states, holder), len(states), withOwner(holder))
	case holder != "":
		fmt.Fprintf(w, "held by %s on %d of %d nodes (%d needed)%s\n", shown(holder), holding, len(states), quorum, withOwner(holder))
	case len(readers) > 0:
		fmt.Fprintf(w, "held shared by %s, each on at least %d of %d nodes\n",
			countReaders(len(readers)), quorum, len(states))
	case delayedOn(states) >= quorum:
		fmt.Fprintf(w, "not held: its holders' TTLs ran out; their lock-delay keeps others out on %d of %d nodes\n",
			delayedOn(states), len(states))
	case dataOn(states) > 0:
		fmt.Fprintf(w, "not held: %q holds data of another type than a lock's on %d of %d nodes (another program's key?)\n",
			key, dataOn(states), len(states))
	case holding > 0:
		fmt.Fprintf(w, "not held: no token is on a majority (the most is %d of %d nodes, %d needed): "+
			"an acquisition in progress, or leftovers that expire with their TTL\n", holding, len(states), quorum)
	default:
		fmt.Fprintf(w, "not held\n")
	}
}

// secondLook bounds the read of the nodes that explains an outcome a
// command has already (who holds a key a writer was refused, what data a
// key holds): a node that does not answer must not make a one-attempt
// acquire, or a check, last seconds longer.
const secondLook = 500 * time.Millisecond

// lookAgain reads what the nodes hold for key, within secondLook: a node
// that did not answer by then has an error in its state.
func lookAgain(ctx context.Context, client *redlock.Client, key string) ([]redlock.NodeState, error) {
	ctx, cancel := context.WithTimeout(ctx, secondLook)
	defer cancel()
	return client.Inspect(ctx, key)
}

// dataOn counts the nodes where the key holds data that is no lock.
func dataOn(states []redlock.NodeState) int {
	n := 0
	for _, st := range states {
		if st.Err == nil && st.Data != "" {
			n++
		}
	}
	return n
}

// lockStateJSON describes what every node holds for the lock key.
func lockStateJSON(key string, quorum int, holder string, states []redlock.NodeState) inspectJSON {
	out := inspectJSON{Key: key, Quorum: quorum, Holder: holder, Readers: sharedBy(states, quorum)}
	out.ReaderGrants = grantsJSON(out.Readers)
	if holder != "" {
		g := newGrantJSON(holder)
		out.Owner, out.Since, out.AgeMs = g.Owner, g.Since, g.AgeMs
	}
	for _, st := range states {
		n := nodeStateJSON{Node: st.Node, Holder: st.Holder, Owner: st.Owner, Since: sinceText(st.Since),
			Readers: append([]string{}, st.Readers...), ReaderGrants: grantsJSON(st.Readers), TTLMs: st.TTL.Milliseconds(), Fence: st.Fence,
			Recovering: st.Recovering, RecoveringLeftMs: st.RecoveringLeft.Milliseconds(), NoMarker: st.NoMarker,
			ForcedBy: st.ForcedBy, ForcedAt: sinceText(st.ForcedAt), Data: st.Data, DelayOnly: delayOnly(st)}
		if st.TTL < 0 {
			n.TTLMs = -1
		}
		if st.Err != nil {
			n.Error = st.Err.Error()
		}
		out.Nodes = append(out.Nodes, n)
	}
	return out
}

// verdict returns the token held on a quorum of the nodes ("" if none), the
// number of nodes holding the most common token, and how many nodes answered.
func verdict(states []redlock.NodeState, quorum int) (holder string, holding, answered int) {
	count := map[string]int{}
	for _, st := range states {
		if st.Err != nil {
			continue
		}
		answered++
		if st.Holder != "" {
			count[st.Holder]++
		}
	}
	best := ""
	for tok, n := range count {
		if n > holding || (n == holding && tok < best) {
			best, holding = tok, n
		}
	}
	if holding >= quorum {
		holder = best
	}
	return holder, holding, answered
}

// writeStates prints one row per node: who holds the lock there (see
// nodeHolder), its TTL, the fence counter and the node's state.
func writeStates(w io.Writer, key string, states []redlock.NodeState) {
	fmt.Fprintf(w, "lock %q:\n", key)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tHOLDER\tTTL\tFENCE\tSTATE")
	for _, st := range states {
		if st.Err != nil {
			fmt.Fprintf(tw, "%s\t-\t-\t-\terror: %v\n", st.Node, st.Err)
			continue
		}
		holder, ttl := nodeHolder(st), "-"
		if holder != "-" {
			ttl = st.TTL.Round(time.Millisecond).String()
			if st.TTL < 0 {
				ttl = "no expiry"
			}
			if delayOnly(st) {
				ttl += " (lock-delay)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", st.Node, holder, ttl, st.Fence, nodeState(st))
	}
	tw.Flush()
}

// delayOnly reports that only a lock-delay keeps the key on a node: its
// holder's TTL, or every reader's, ran out there.
func delayOnly(st redlock.NodeState) bool {
	return st.DelayOnly || (len(st.Readers) > 0 && len(st.DelayOnlyReaders) == len(st.Readers))
}

// delayKept counts the nodes where holder's TTL ran out and only its
// lock-delay keeps the key.
func delayKept(states []redlock.NodeState, holder string) int {
	n := 0
	for _, st := range states {
		if st.Err == nil && st.Holder == holder && st.DelayOnly {
			n++
		}
	}
	return n
}

// delayedOn counts the nodes that answered where only a lock-delay keeps
// the key (see delayOnly).
func delayedOn(states []redlock.NodeState) int {
	n := 0
	for _, st := range states {
		if st.Err == nil && delayOnly(st) {
			n++
		}
	}
	return n
}

// nodeState says whether a node that answered votes: "ready", or how it
// is recovering.
func nodeState(st redlock.NodeState) string {
	switch {
	case st.Recovering && st.NoMarker:
		return fmt.Sprintf("recovering: no restart marker, sits out %s from the next acquisition", st.RecoveringLeft.Round(time.Second))
	case st.Recovering && st.Restarted:
		// Its marker is another process's: the countdown starts when an
		// acquisition writes the new one, as doctor says.
		return fmt.Sprintf("recovering: restarted or failed over, sits out %s from the next acquisition", st.RecoveringLeft.Round(time.Second))
	case st.Recovering:
		return fmt.Sprintf("recovering: votes again in %s", st.RecoveringLeft.Round(100*time.Millisecond))
	}
	return "ready"
}
