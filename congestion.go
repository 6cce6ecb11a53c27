package redlock

import (
	"time"

	"github.com/redlock-go/redlock/internal/nodes"
)

// congestion paces a waiter whose attempts the nodes did not answer in
// time. When so many nodes time out, or are so far behind that the
// attempt was not even sent to them, that no quorum can answer, they are
// overloaded, and trying again at the retry strategy's pace only adds to
// their load: a crowd of waiters that all time out and retry within
// milliseconds keeps the nodes too busy to answer anyone, and nobody is
// granted the lock for as long as it lasts. So each such attempt doubles
// the least pause before the next, from the time the nodes made the
// attempt wait up to behindWait, the pace of a waiter queued behind
// others. An attempt that a quorum answers ends it; one that asked no node
// changes nothing. A node that is down (a refused connection) is not
// overloaded, and retrying it costs nobody: it does not count. A release
// announcement still ends the pause: the nodes that sent it answer.
type congestion struct {
	// waited is how long the nodes that did not answer made the last
	// attempt wait.
	waited time.Duration
	// attempts is how many attempts in a row a quorum did not answer.
	attempts int
}

// note is told of a failed attempt's error.
func (g *congestion) note(err error) {
	qe := quorumError(err)
	if qe == nil || !asked(qe.Nodes) {
		return
	}
	waited := unanswered(qe.Nodes, qe.Quorum)
	if waited == 0 {
		*g = congestion{}
		return
	}
	// The longest wait of the streak: a request refused unsent waits
	// nothing, and must not bring the doubling back down to its start.
	g.waited = max(g.waited, waited)
	g.attempts++
}

// pause returns the pause before the next attempt: delay, or longer after
// attempts that a quorum did not answer.
func (g *congestion) pause(delay time.Duration) time.Duration {
	if g.attempts == 0 {
		return delay
	}
	least := behindWait
	if shift := g.attempts - 1; shift < 16 {
		least = min(g.waited<<shift, behindWait)
	}
	return max(delay, randomBetween(least/2, least))
}

// asked reports whether a request went to any node of results.
func asked(results []NodeResult) bool {
	for _, r := range results {
		if r.Outcome != OutcomeNotAsked {
			return true
		}
	}
	return false
}

// unanswered returns how long the nodes of results that did not answer a
// request in time (a timeout, or a request not sent because the node has
// yet to answer earlier ones) made it wait, when they were so many that
// fewer than quorum answered; zero otherwise.
func unanswered(results []NodeResult, quorum int) time.Duration {
	silent, waited := 0, time.Duration(0)
	for _, r := range results {
		if r.Outcome == OutcomeTimeout || r.Outcome == OutcomeError && nodes.NotSent(r.Err) {
			silent++
			waited = max(waited, r.Latency)
		}
	}
	if quorum == 0 || silent <= len(results)-quorum {
		return 0
	}
	return max(waited, time.Millisecond)
}
