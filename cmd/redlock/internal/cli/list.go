package cli

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/redlock-go/redlock"
)

func listCommand() *command {
	return &command{
		name:       "list",
		jsonReport: true,
		synopsis:   "[flags] [PREFIX]",
		summary:    "list the held locks, permits and readers whose names begin with PREFIX, over every node",
		about: `
Lists the locks of this library held on the nodes whose names begin with
PREFIX (all when absent; PREFIX is a plain prefix, not a pattern): mutexes,
permits of semaphores (KEY:permit:i) and locks held shared by readers. Each
lock is read on every node and shown once: who holds it (the writer's
owner, or each reader's), since when, on how many nodes, the longest TTL
left on a node, and how many clients wait for it.

It never blocks a node: it walks each node's keys with SCAN, 200 at a time
(never KEYS), over a Redis Cluster on every master, reading a few bytes of
each key whose name begins with PREFIX. Locks of other libraries (redsync,
node-redlock) are not listed: 'redlock inspect KEY' shows them. At most
10000 locks are listed; pass a longer PREFIX to see others.

Output: a table, one row per lock: KEY, KIND (lock, permit, shared), OWNER
(each reader's, comma-separated), SINCE (how long ago the grant began, by
the holder's clock), TTL, NODES (on how many nodes of all, "*" when not a
majority: an acquisition under way or leftovers that expire) and WAITING;
then "N locks held", counting those on a majority, and how many more are
not. With --json one object: {"prefix", "quorum", "all" (the nodes),
"locks": [{"key", "key_base64" (only for a key that is no UTF-8, which
"key" cannot carry), "kind", "semaphore", "permit", "grants": [{"token",
"owner", "since", "age_ms"}], "holding" (the nodes that hold it),
"answered", "majority", "ttl_ms", "waiting"}], "complete", "error"}.`,
		exits: []exitDoc{
			{"0", "every node was listed"},
			docUsage,
			{code(exitUnavailable), "some node, or some master of a cluster, could not be listed (or more than 10000 locks): the locks found are shown"},
			docConfigShown,
		},
		setup: setupList,
	}
}

// heldJSON is one lock in list's JSON output.
type heldJSON struct {
	Key string `json:"key"`
	// KeyBase64 is Key in base64 when Key is no UTF-8, which JSON strings
	// cannot carry: "key" then has U+FFFD for the bytes that are not.
	KeyBase64 string      `json:"key_base64,omitempty"`
	Kind      string      `json:"kind"` // lock, permit or shared
	Semaphore string      `json:"semaphore,omitempty"`
	Permit    int         `json:"permit,omitempty"`
	Grants    []grantJSON `json:"grants"`
	Holding   int         `json:"holding"` // nodes that hold it
	Answered  int         `json:"answered"`
	Majority  bool        `json:"majority"`
	TTLMs     int64       `json:"ttl_ms"`
	Waiting   int         `json:"waiting"`
}

// listJSON is list's JSON output.
type listJSON struct {
	Prefix   string     `json:"prefix"`
	Quorum   int        `json:"quorum"`
	All      int        `json:"all"` // the nodes
	Locks    []heldJSON `json:"locks"`
	Complete bool       `json:"complete"`
	// Error, Reason and ExitCode are a failure's (see failureJSON), when
	// some node could not be listed; else absent.
	Error    string  `json:"error,omitempty"`
	Reason   failure `json:"reason,omitempty"`
	ExitCode int     `json:"exit_code,omitempty"`
}

func setupList(fs *flag.FlagSet) runner {
	var nodes nodeFlags
	nodes.register(fs, false, false)
	nodes.readOnly = true
	asJSON := fs.Bool("json", false, "print one JSON object, also on failure")
	return func(ctx context.Context, s streams, args []string) int {
		r := report{s: s, cmd: "list", json: *asJSON}
		if len(args) > 1 || (len(args) == 1 && strings.HasPrefix(args[0], "-")) {
			return r.usage(fmt.Sprintf("want [PREFIX], got %q", args))
		}
		prefix := ""
		if len(args) == 1 {
			prefix = args[0]
		}
		client, f, err := nodes.dial(ctx, s.stderr)
		if err != nil {
			return r.failedAs(f, err)
		}
		defer nodes.close(client)
		held, err := client.List(ctx, prefix)
		if err != nil && !errors.Is(err, redlock.ErrListIncomplete) {
			return r.failed(err)
		}
		urls, _ := nodes.urls() // dial parsed them already
		writeList(r, prefix, len(urls), held, err)
		if err != nil {
			fmt.Fprintf(s.stderr, "redlock list: %s\n", errText(err))
			return exitUnavailable
		}
		return exitOK
	}
}

// writeList prints the locks held on nodes nodes, as text or JSON; err is
// the listing's ErrListIncomplete, or nil.
func writeList(r report, prefix string, nodes int, held []redlock.HeldLock, err error) {
	if r.json {
		out := listJSON{Prefix: prefix, All: nodes, Quorum: nodes/2 + 1, Locks: []heldJSON{}, Complete: err == nil}
		if err != nil {
			out.Error, out.Reason, out.ExitCode = errText(err), failUnavailable, exitUnavailable
		}
		for _, h := range held {
			out.Locks = append(out.Locks, newHeldJSON(h))
		}
		writeJSON(r.s.stdout, out)
		return
	}
	writeHeld(r.s.stdout, held)
}

// newHeldJSON describes one lock held.
func newHeldJSON(h redlock.HeldLock) heldJSON {
	out := heldJSON{Key: h.Key, Kind: heldKind(h), Semaphore: h.Semaphore, Permit: h.Permit, Grants: []grantJSON{},
		Holding: h.Nodes, Answered: h.Answered, Majority: h.Quorum, TTLMs: h.TTL.Milliseconds(), Waiting: h.Waiting}
	if !utf8.ValidString(h.Key) {
		out.KeyBase64 = base64.StdEncoding.EncodeToString([]byte(h.Key))
	}
	for _, g := range h.Grants {
		out.Grants = append(out.Grants, newGrantJSON(g.Token))
	}
	return out
}

// heldKind names what h is: "lock", "permit" or "shared".
func heldKind(h redlock.HeldLock) string {
	switch {
	case h.Shared:
		return "shared"
	case h.Permit > 0:
		return "permit"
	}
	return "lock"
}

// writeHeld prints one row per lock held, then how many.
func writeHeld(w io.Writer, held []redlock.HeldLock) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tKIND\tOWNER\tSINCE\tTTL\tNODES\tWAITING")
	for _, h := range held {
		owners, since := make([]string, len(h.Grants)), "-"
		var oldest time.Time
		for i, g := range h.Grants {
			owners[i] = ownerColumn(g.Token)
			if !g.Since.IsZero() && (oldest.IsZero() || g.Since.Before(oldest)) {
				oldest = g.Since
			}
		}
		if !oldest.IsZero() {
			since = ageOf(oldest).Round(time.Millisecond).String() + " ago"
		}
		nodes := fmt.Sprintf("%d/%d", h.Nodes, h.All)
		if !h.Quorum {
			nodes += "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", shown(h.Key), heldKind(h), strings.Join(owners, ","), since,
			h.TTL.Round(time.Millisecond), nodes, h.Waiting)
	}
	tw.Flush()
	fmt.Fprintln(w, heldSummary(held))
}

// heldSummary says how many of held stand on a majority of nodes, and how
// many more (marked "*") do not.
func heldSummary(held []redlock.HeldLock) string {
	standing := 0
	for _, h := range held {
		if h.Quorum {
			standing++
		}
	}
	summary := plural(standing, "lock") + " held"
	if short := len(held) - standing; short > 0 {
		summary += fmt.Sprintf(", %d more on fewer than a majority of nodes (*)", short)
	}
	return summary
}
