package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/redlock-go/redlock"
)

// readerNodes returns, for each reader token found on some node that
// answered, on how many nodes it holds the lock shared, and on how many
// of them only its lock-delay keeps it (NodeState.DelayOnlyReaders).
func readerNodes(states []redlock.NodeState) (nodes, delayed map[string]int) {
	nodes, delayed = map[string]int{}, map[string]int{}
	for _, st := range states {
		if st.Err != nil {
			continue
		}
		for _, token := range st.Readers {
			nodes[token]++
			if slices.Contains(st.DelayOnlyReaders, token) {
				delayed[token]++
			}
		}
	}
	return nodes, delayed
}

// sharedBy returns the tokens of the readers that hold the lock shared on
// a quorum of the nodes, sorted: those whose acquisition stands, not
// counting the nodes where only a reader's lock-delay keeps it. Never nil,
// so that JSON shows none as [].
func sharedBy(states []redlock.NodeState, quorum int) []string {
	readers := []string{}
	nodes, delayed := readerNodes(states)
	for token, n := range nodes {
		if n-delayed[token] >= quorum {
			readers = append(readers, token)
		}
	}
	slices.Sort(readers)
	return readers
}

// countReaders renders a number of readers: "1 reader", "3 readers".
func countReaders(n int) string {
	if n == 1 {
		return "1 reader"
	}
	return fmt.Sprintf("%d readers", n)
}

// writeReaders lists, after inspect's table of nodes, every reader token
// found on some node and on how many nodes it holds the lock shared;
// nothing when no node has readers.
func writeReaders(w io.Writer, states []redlock.NodeState) {
	nodes, delayed := readerNodes(states)
	if len(nodes) == 0 {
		return
	}
	tokens := slices.Sorted(maps.Keys(nodes))
	width := 0
	for _, token := range tokens {
		width = max(width, len(shown(token)))
	}
	fmt.Fprintln(w, "readers:")
	for _, token := range tokens {
		kept := ""
		if delayed[token] > 0 {
			kept = fmt.Sprintf(" (its TTL ran out on %d: only its lock-delay keeps it there)", delayed[token])
		}
		fmt.Fprintf(w, "  %-*s  on %d of %d nodes%s%s\n", width, shown(token), nodes[token], len(states), kept, withOwner(token))
	}
}

// nodeHolder renders who holds the lock on a node that answered, for
// inspect's HOLDER column: the writer's token, "N readers", or "-".
func nodeHolder(st redlock.NodeState) string {
	switch {
	case st.Holder != "":
		return shown(st.Holder)
	case len(st.Readers) > 0:
		return countReaders(len(st.Readers))
	case st.Data != "":
		return "(" + st.Data + ", no lock)"
	}
	return "-"
}
