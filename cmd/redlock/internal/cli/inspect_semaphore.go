package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/redlock-go/redlock"
)

// semaphoreJSON is the JSON output of inspect --limit: each permit as
// inspect shows a lock, and how many of them are held.
type semaphoreJSON struct {
	Key     string        `json:"key"`
	Limit   int           `json:"limit"`
	Quorum  int           `json:"quorum"`
	Held    int           `json:"held"`
	Unknown int           `json:"unknown"` // permits too few nodes answered for
	Permits []inspectJSON `json:"permits"`
	// Error, Reason and ExitCode are a failure's (see failureJSON), when
	// too few nodes answered for some permit; else absent.
	Error    string  `json:"error,omitempty"`
	Reason   failure `json:"reason,omitempty"`
	ExitCode int     `json:"exit_code,omitempty"`
}

// permitVerdict is one permit of a semaphore, what the nodes hold for it
// and what that makes of it (see verdict).
type permitVerdict struct {
	permitStates
	holder            string
	holding, answered int
}

// inspectSemaphore shows who holds each permit of the semaphore key of
// limit permits, and how many are held, and returns the exit code:
// exitUnavailable when too few nodes answered for some permit.
func inspectSemaphore(ctx context.Context, r report, client *redlock.Client, key string, limit int) int {
	permits, err := inspectPermits(ctx, client, key, limit)
	if err != nil {
		return r.failed(err)
	}
	quorum := len(permits[0].states)/2 + 1
	verdicts := make([]permitVerdict, len(permits))
	held, unknown := 0, 0
	for i, p := range permits {
		v := permitVerdict{permitStates: p}
		v.holder, v.holding, v.answered = verdict(p.states, quorum)
		verdicts[i] = v
		switch {
		case v.answered < quorum:
			unknown++
		case v.holder != "":
			held++
		}
	}
	if r.json {
		out := semaphoreJSON{Key: key, Limit: limit, Quorum: quorum, Held: held, Unknown: unknown}
		for _, v := range verdicts {
			out.Permits = append(out.Permits, lockStateJSON(v.key, quorum, v.holder, v.states))
		}
		if unknown > 0 {
			out.Error = fmt.Sprintf("too few nodes answered for %d of %d permits: fewer than %d", unknown, limit, quorum)
			out.Reason, out.ExitCode = failUnavailable, exitUnavailable
		}
		writeJSON(r.s.stdout, out)
	} else {
		writePermits(r.s.stdout, key, quorum, verdicts)
		fmt.Fprintf(r.s.stdout, "%d of %d permits held", held, limit)
		if unknown > 0 {
			fmt.Fprintf(r.s.stdout, ", %d unknown: fewer than %d nodes answered for them, "+
				"so nobody can take or renew them now", unknown, quorum)
		}
		fmt.Fprintln(r.s.stdout)
	}
	if unknown > 0 {
		return exitUnavailable
	}
	return exitOK
}

// writePermits prints one row per permit, then a line per node that did
// not answer or is recovering.
func writePermits(w io.Writer, key string, quorum int, verdicts []permitVerdict) {
	fmt.Fprintf(w, "semaphore %q, %d permits:\n", key, len(verdicts))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PERMIT\tKEY\tHOLDER\tOWNER\tSINCE\tTTL\tFENCE\tSTATE")
	for i, v := range verdicts {
		holder, owner, since, ttl := "-", "-", "-", "-"
		var longest time.Duration
		var fence uint64
		for _, st := range v.states {
			fence = max(fence, st.Fence)
			if v.holder != "" && st.Holder == v.holder {
				longest = max(longest, st.TTL)
			}
		}
		if v.holder != "" {
			holder, owner, since, ttl = shown(v.holder), ownerColumn(v.holder), sinceColumn(v.holder), longest.Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", i+1, shown(v.key), holder, owner, since, ttl, fence, v.state(quorum))
	}
	tw.Flush()
	writeNodeTroubles(w, verdicts)
}

// state says, in a few words, what a majority of the nodes make of the
// permit.
func (v permitVerdict) state(quorum int) string {
	nodes := len(v.states)
	switch {
	case v.answered < quorum:
		return fmt.Sprintf("unknown: %d of %d nodes answered, %d needed", v.answered, nodes, quorum)
	case v.holder != "":
		return fmt.Sprintf("held on %d of %d nodes", v.holding, nodes)
	case v.holding > 0:
		return fmt.Sprintf("free: a token on %d of %d nodes, %d needed", v.holding, nodes, quorum)
	}
	return "free"
}

// writeNodeTroubles prints a line for each node that did not answer for
// some permit, with its first error, or that is recovering.
func writeNodeTroubles(w io.Writer, verdicts []permitVerdict) {
	for node := range verdicts[0].states {
		for _, v := range verdicts {
			st := v.states[node]
			if st.Err != nil {
				fmt.Fprintf(w, "node %s: error: %v\n", st.Node, st.Err)
				break
			}
			if st.Recovering {
				fmt.Fprintf(w, "node %s: %s\n", st.Node, nodeState(st))
				break
			}
		}
	}
}
