package scenario

import (
	"fmt"
	"time"

	"github.com/redlock-go/redlock/torture/check"
	"github.com/redlock-go/redlock/torture/faults"
)

// The terms of a row's bound on waiting (see Scenario.Liveness): each is
// the most one step takes, on a machine of two cores that the nodes, the
// proxies, the workers and other tests share.
const (
	// holdOverhead is what a hold takes beyond its think time, per name
	// held: the register's read and write over HTTP, and the release; 20
	// to 40 ms at the 99th percentile on a busy machine, a few at the
	// median.
	holdOverhead = 20 * time.Millisecond
	// roundTrip is one round to the nodes, an attempt or a release that
	// carries the next holder's attempt: at most the node timeout, the
	// library's default 50 ms while replies come in time, past which a
	// node counts as not answering (it rises while they come late).
	roundTrip = 50 * time.Millisecond
	// retryPause is the longest pause between attempts of the library's
	// default retry strategy (Options.Retry): a waiter that no release
	// wakes tries again within it.
	retryPause = 200 * time.Millisecond
	// behindPause is the longest pause of a waiter that the nodes queued
	// behind the two clients the next release wakes (Options.Retry): with
	// more than two clients waiting, a lost wake-up costs that much.
	behindPause = time.Second
	// keepPlaceEvery is how often a waiter whose retry pauses are longer
	// renews its place in a key's queue (Options.Retry).
	keepPlaceEvery = time.Second
	// stall is a stall of every process of the run at once: on the busy
	// two-core machine a hold that thinks for 5 ms was seen to last 300.
	stall = 300 * time.Millisecond
	// loopRounds is how many rounds of attempts workers that loop
	// TryAcquire may take to settle who gets a free lock: attempts that
	// meet split the votes and all fail, now and then several rounds in a
	// row.
	loopRounds = 10
	// workerStart is how long the start of one worker process takes on
	// the busy machine: 64 of them started within 0.33 to 0.64 s, and
	// within 3 s where their starts met the nodes' first requests (the
	// liveness checker waits for the last: see check.Bound's Settle).
	workerStart = 10 * time.Millisecond
	// recoveryTTLs is how many TTLs after its end a fault still counts:
	// a key that it stranded on a node expires within one, and a
	// restarted node withholds its vote for another (RecoveryDelay).
	recoveryTTLs = 2
	// queueLasts is how long a waiter's place in a key's queue lasts past
	// its last attempt or renewal (the library's wire.QueueLasts): a
	// waiter that stopped trying holds those behind it back for as long,
	// when the lock expires unreleased (SAFETY.md, Liveness point 4).
	queueLasts = 2 * time.Second
	// namedLasts is how long the places of the clients a release names
	// last unless they try for the key: three node timeouts, at least a
	// quarter second (the library's namedLasts).
	namedLasts = 250 * time.Millisecond
	// resubscribe is how long a client takes to subscribe again once a
	// node dropped its subscriptions, and the nodes to confirm it: the
	// half second before the library listens again (over rueidis, whose
	// Listen returns), a dial and a round trip, on the busy machine.
	resubscribe = time.Second
	// replicaSettle is how long the start of a run whose grants wait for
	// replicas (WaitReplicas) counts as a fault: no grant counts until the
	// replicas, started with their nodes, caught up with them, which took
	// a second on a busy machine.
	replicaSettle = 2 * time.Second
)

// Liveness returns the row's bound on waiting, derived from its holds, its
// waiters and the retry policy (see check.Bound): waiters in Acquire, or
// AcquireAll, are held to the turns ahead of them; workers that loop
// TryAcquire to how long the lock stays free while they try. A row with
// faults is held to it only outside them: a fault may stop every grant
// for as long as it lasts (a majority cut off, a quorum split, a restarted
// node in quarantine).
func (s Scenario) Liveness() check.Bound {
	s = s.WithDefaults()
	var b check.Bound
	if s.Wait {
		b = s.waitBound()
	} else {
		b = s.loopBound()
	}
	if b.Loops || s.Workers > 1 {
		b.Settle = time.Duration(s.Workers) * workerStart
		b.Derivation += fmt.Sprintf("; the first %v count as a fault, and on until the last of the %d worker "+
			"processes made its first call: they start one after another, and the lock is not free for them "+
			"until they have", b.Settle, s.Workers)
	}
	if s.WaitReplicas > 0 {
		b.Settle = max(b.Settle, replicaSettle)
		b.Derivation += fmt.Sprintf("; the first %v count as a fault: grants wait for the replicas to catch up "+
			"with their nodes after the start", replicaSettle)
	}
	if fs := s.Faults(); len(fs) > 0 {
		b.FaultFree, b.Recovery = true, recoveryTTLs*s.TTL
		b.Derivation += fmt.Sprintf("; only outside faults, each to %v after its end (%d TTLs: a key a fault strands "+
			"expires within one, a restarted node's quarantine lasts another)", b.Recovery, recoveryTTLs)
		for _, f := range fs {
			if kind, why := harmless(f); kind != "" {
				b.Ignore = append(b.Ignore, kind)
				b.Derivation += "; " + why
			}
			if kinds, cost, why := s.costly(f); len(kinds) > 0 {
				if b.Costs == nil {
					b.Costs = map[string]time.Duration{}
				}
				for _, kind := range kinds {
					b.Costs[kind] = cost
				}
				b.Derivation += "; " + why
			}
		}
		if b.Loops {
			b.MinServed = 0
			b.Derivation += "; share served not checked: a fault may stop every grant while the loops count their runs"
		}
	}
	return b
}

// harmless returns the kind under which f is recorded, and says why,
// when waiting stays bounded all along f, so that it does not count as a
// fault for the bound: a quorum split, under which each side keeps a
// quorum through the shared node, and a skew of the nodes' clocks, which
// ends locks early, if anything. Its kind is "" for other faults.
func harmless(f faults.Fault) (kind, why string) {
	switch f.(type) {
	case *faults.SplitQuorum:
		return "split", "the quorum split does not count: each side keeps a quorum through the shared node"
	case faults.ClockSkew:
		return "clock-skew", "the clock skew does not count: it ends locks early, if anything"
	}
	return "", ""
}

// costly returns the kinds under which f is recorded, with how much
// longer than the bound a waiter may wait under it, and says why, when
// waiting stays bounded all along f, but longer: a holder killed and the
// waiters but one stopped (StrandWaiters) hold the survivor back until the
// lock expires and the stopped waiters' places in line lapse, whichever
// comes last; dropped subscriptions (DropSubscriptions) until its client
// subscribed again; the death of the semaphore waiter first in line
// (KillFirstWaiter) by a node timeout for each grant ahead, while its place
// lasts, and that of the first two together until the release that names
// them has their places lapse. Its kinds are nil for other faults.
func (s Scenario) costly(f faults.Fault) (kinds []string, cost time.Duration, why string) {
	if _, ok := f.(faults.KillLeadersAtRead); ok {
		return []string{faults.KindKillLeader}, s.TTL, fmt.Sprintf("a candidate that a leader's death touches may "+
			"find the lead free %v longer: the history knows the deadline of the lead's grant, and its renewals, "+
			"up to the death, keep it on the nodes up to a TTL later; the killed workers' own calls are left out", s.TTL)
	}
	if _, ok := f.(faults.DropSubscriptions); ok && s.Wait {
		return []string{faults.KindDropSubscriptions}, resubscribe, fmt.Sprintf("a waiter that a drop of the "+
			"subscriptions touches may wait %v more: a release announced before its client subscribed again "+
			"goes unheard, and the confirmations of the new subscriptions tell it to try", resubscribe)
	}
	if k, ok := f.(faults.KillFirstWaiter); ok && s.Wait && k.Together > 1 {
		cost = max(s.TTL, namedLasts+retryPause+roundTrip)
		return []string{faults.KindKillWaiter}, cost, fmt.Sprintf("a waiter that the death of the %d clients first "+
			"in line touches may wait %v more: the next release names them, and their places, which it shortens, "+
			"last %v unrenewed; the others then find them gone at their next attempt (a retry pause, %v, and a "+
			"round, %v); or the TTL %v, when a worker killed had just been granted a permit, which then expires "+
			"unreleased; the killed workers' own calls are left out", k.Together, cost, namedLasts, retryPause,
			roundTrip, s.TTL)
	}
	if _, ok := f.(faults.KillFirstWaiter); ok && s.Wait {
		waiters := s.Workers*max(s.Goroutines, 1) - 1
		cost = max(s.TTL, min(time.Duration(waiters)*roundTrip, queueLasts))
		return []string{faults.KindKillWaiter}, cost, fmt.Sprintf("a waiter that the death of the client first in "+
			"line touches may wait %v more: until the dead client's place lapses, each grant to one of the %d "+
			"other waiters waits a node timeout (round %v) for it, the second named trying only then; or the "+
			"TTL %v, when the worker killed had just been granted a permit, which then expires unreleased; "+
			"the killed workers' own calls are left out", cost, waiters, roundTrip, s.TTL)
	}
	if _, ok := f.(faults.StrandWaiters); !ok || !s.Wait {
		return nil, 0, ""
	}
	cost = max(s.TTL, queueLasts)
	return []string{faults.KindKillHolder, faults.KindStopWaiter}, cost, fmt.Sprintf("a waiter that the holder's death "+
		"and the other waiters' stop touch may wait %v more, the longer of the TTL %v (the lock expires unreleased) "+
		"and the %v a stopped waiter's place in line lasts unrenewed, which the waiters behind it respect; the "+
		"killed and stopped workers' own calls are left out", cost, s.TTL, queueLasts)
}

// WaitFor returns how long a waiting worker (Wait) waits before it gives
// up: four TTLs, or a TTL past the longest a waiter may wait (the bound on
// waiting and the most a fault lengthens it by) if that is longer, so that
// a give-up always means a wait past the bound.
//
// Candidates of an election with long retry pauses campaign for the whole
// row, as a long-lived candidate does: a new Campaign call reads the
// nodes afresh, so that only a call that waits through several failovers
// shows whether it learns of each lead's expiry.
func (s Scenario) WaitFor() time.Duration {
	s = s.WithDefaults()
	if s.Elect && s.RetryPause > 0 {
		return s.Duration
	}
	if !s.Wait {
		return 0
	}
	b := s.Liveness()
	return max(4*s.TTL, b.Wait+b.MostCost()+s.TTL)
}

// waitBound returns the bound of waiters in Acquire or AcquireAll: the
// turns that may be ahead of one, each a hold and a round to the nodes,
// then a pause of the retry policy in case its wake-up was lost, and a
// stall. Every acquisition must be served: workers give up only past the
// bound (WaitFor).
func (s Scenario) waitBound() check.Bound {
	ahead, who := s.ahead()
	turn := s.hold() + roundTrip
	retry, pause := retryPause, "retry pause"
	switch {
	case s.RetryPause > 0:
		retry, pause = keepPlaceEvery, fmt.Sprintf("a renewal of the place in line (not the %v retry pause: "+
			"the release that makes a waiter next wakes it)", s.RetryPause)
	case s.Workers > 2:
		retry, pause = behindPause, "pause behind two clients"
	}
	b := check.Bound{
		Wait:      time.Duration(ahead)*turn + retry + stall,
		MinServed: 1,
		Derivation: fmt.Sprintf("%d turns ahead (%s) × (hold %v + round %v) + %s %v + stall %v; every acquisition served",
			ahead, who, s.hold(), roundTrip, pause, retry, stall),
	}
	return b
}

// ahead returns how many turns may be ahead of a waiter, and says why:
// every other waiter's (clients take turns, and a client's goroutines its
// turns: g × C − 1 for a goroutine of a client of g among C clients, which
// is every other waiter's as every worker runs Goroutines); a semaphore's waiters take their turns limit at a
// time; a read-write lock's writers take a turn each, and its readers one
// together: a reader may wait for those holding when a writer came, then
// for every writer.
func (s Scenario) ahead() (int, string) {
	waiters := s.Workers * max(s.Goroutines, 1)
	switch {
	case s.Limit > 0:
		return (waiters - 1 + s.Limit - 1) / s.Limit, fmt.Sprintf("%d other waiters, %d permits", waiters-1, s.Limit)
	case s.readers():
		w := s.writers()
		return w + 1, fmt.Sprintf("%d writers, each alone, and readers together", w)
	}
	return waiters - 1, fmt.Sprintf("%d other waiters", waiters-1)
}

// readers reports whether s has readers of a read-write lock.
func (s Scenario) readers() bool { return s.Readers > 0 || s.ReaderGoroutines > 0 }

// writers returns how many goroutines of s take the lock's name as
// writers when s has readers.
func (s Scenario) writers() int {
	g := max(s.Goroutines, 1)
	if s.ReaderGoroutines > 0 {
		return s.Workers * (g - s.ReaderGoroutines)
	}
	return (s.Workers - s.Readers) * g
}

// hold returns the longest a holder of s keeps what it took, as the bound
// counts it: its think time and the overhead per name, or its TTL when it
// holds to the end of its validity.
func (s Scenario) hold() time.Duration {
	if s.HoldMargin > 0 {
		return s.TTL
	}
	names := 1
	for _, set := range s.NameSets {
		names = max(names, len(set))
	}
	if s.Pick > 0 {
		names = s.Pick
	}
	return s.ThinkMax + time.Duration(names)*holdOverhead
}

// loopBound returns the bound of workers that loop TryAcquire: the lock
// is free while they try for at most some rounds of an attempt and a
// pause, and a stall. With holds in between as long as hold, that makes
// at least so many grants in the row's duration, each ending one loop's
// run of attempts, while at most one run per loop is cut short at the end.
func (s Scenario) loopBound() check.Bound {
	round, pause := s.loopRound()
	wait := loopRounds*round + stall
	loops := s.Workers * max(s.Goroutines, 1)
	grants := int(s.Duration / (wait + s.hold() + stall))
	b := check.Bound{Loops: true, Wait: wait}
	if grants > 0 {
		b.MinServed = float64(grants) / float64(grants+loops)
	}
	b.Derivation = fmt.Sprintf("lock free while loops try: %d rounds × (%s) + stall %v; "+
		"served: at least %v / (that + hold %v + stall) = %d grants, so %d of %d runs (one per loop cut short at the end)",
		loopRounds, pause, stall, s.Duration, s.hold(), grants, grants, grants+loops)
	return b
}

// loopRound returns how long one round of a loop's attempts takes at most
// while the lock is free, and says why: an attempt and a pause of the
// retry policy; for candidates of an election whose retry pauses are
// longer (RetryPause), a read of the nodes that finds the lead free, at
// the lead's expiry or at the poll that follows a failed attempt (the
// library's observer poll, a twentieth of the TTL, 50 to 500 ms), and the
// attempt it nudges.
func (s Scenario) loopRound() (time.Duration, string) {
	if s.Elect && s.RetryPause > 0 {
		poll := min(max(s.TTL/20, 50*time.Millisecond), 500*time.Millisecond)
		return 2*roundTrip + poll, fmt.Sprintf("read ≤ round %v + attempt ≤ round %v + poll ≤ %v, not the %v retry pause: "+
			"a candidate reads the nodes at the lead's expiry and while the lead is free", roundTrip, roundTrip, poll, s.RetryPause)
	}
	return roundTrip + DefaultRetryMax, fmt.Sprintf("attempt ≤ round %v + pause ≤ %v", roundTrip, DefaultRetryMax)
}
