package scenario

import (
	"time"

	"github.com/redlock-go/redlock/torture/faults"
)

// livenessDuration is how long each "liveness/" row runs: long enough for
// a starved waiter to stand out from a slow one, short enough for the
// default run.
const livenessDuration = 12 * time.Second

// multikeyLivenessDuration is longer: a set of names that others keep
// taking in part waits for long only now and then.
const multikeyLivenessDuration = 18 * time.Second

// longRetryPause is the retry pause of the
// "liveness/long-retry-pause" row's clients (between half of it and all
// of it): longer than a place in a key's queue and its waiting mark last
// without a renewal (two and three seconds), and than the row's bound on
// waiting, so that a waiter whose place lapsed waits past the bound.
const longRetryPause = 12 * time.Second

// longHoldTTL is the TTL of that row, whose holds take half a second.
const longHoldTTL = 2 * time.Second

// strandStop is how long the "liveness/stranded-waiter" row stops the
// waiters it strands: past the two seconds a place in line lasts
// unrenewed, so that theirs lapse while they are stopped.
const strandStop = 3 * time.Second

// deadWaiterEvery is how often the "liveness/semaphore-dead-first-waiter"
// row kills the worker waiting longest: further apart than a place in line
// lasts unrenewed (2 s), so that each kill leaves one dead client first.
const deadWaiterEvery = 3 * time.Second

// dropEvery is how often the "liveness/long-retry-pause-dropped-subscriptions"
// row drops every subscription: further apart than the row's bound on
// waiting, so that a wait within the bound meets one drop at most, whose
// cost its bound allows (see Scenario.costly).
const dropEvery = 5 * time.Second

// livenessNames are the ten names of the "liveness/multikey-random-3-of-10"
// row, of which each acquisition takes three at random.
var livenessNames = []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}

// livenessRows returns the "liveness/" rows: loads built to find waiters
// that wait for ever, each on five healthy nodes, with the safety checkers
// as everywhere and a bound on waiting of its own.
func livenessRows() []Scenario {
	return []Scenario{
		{
			Name: "liveness/try-crowd-64",
			About: "64 worker processes, each its own client, loop TryAcquire on one lock on five healthy nodes; " +
				"the lock must not stay free for long while they try",
			Workers: 64, Duration: livenessDuration,
		},
		{
			Name: "liveness/rwlock-one-client",
			About: "one worker process, one client: a writer goroutine and sixteen reader goroutines wait in Acquire " +
				"for one name, the readers nearly always holding it together; a waiting writer keeps new readers " +
				"of its own client out",
			Workers: 1, Goroutines: 17, ReaderGoroutines: 16, Wait: true, Duration: livenessDuration,
		},
		{
			Name: "liveness/semaphore-one-client",
			About: "one worker process, one client: eight goroutines wait in Acquire for one of three permits " +
				"of one name, holding each for a few milliseconds",
			Workers: 1, Goroutines: 8, Limit: 3, Wait: true, Duration: livenessDuration,
		},
		{
			Name: "liveness/long-retry-pause",
			About: "six worker processes, each its own client, wait in Acquire for one lock held for about half a " +
				"second each time, with a retry strategy that pauses 6 to 12 s after a refusal: a waiter waits " +
				"past the two seconds its place in line lasts unrenewed, and must still be woken by the release " +
				"that makes it next",
			Workers: 6, Wait: true, TTL: longHoldTTL, ThinkMin: 400 * time.Millisecond, ThinkMax: 600 * time.Millisecond,
			RetryPause: longRetryPause, Duration: livenessDuration,
		},
		{
			Name: "liveness/long-retry-pause-dropped-subscriptions",
			About: "the long-retry-pause row's six clients, over the rueidis adapter, while every node drops every " +
				"subscription connection (CLIENT KILL TYPE pubsub) every 5 s: a release announced before a client " +
				"subscribed again goes unheard, and its waiter must still be served in turn, not sleep out its 6 to " +
				"12 s pause",
			Workers: 6, Wait: true, TTL: longHoldTTL, ThinkMin: 400 * time.Millisecond, ThinkMax: 600 * time.Millisecond,
			RetryPause: longRetryPause, Duration: livenessDuration, Rueidis: true,
			Faults: func() []faults.Fault {
				return []faults.Fault{faults.DropSubscriptions{Every: dropEvery}}
			},
		},
		{
			Name: "liveness/stranded-waiter",
			About: "six worker processes, each its own client, wait in Acquire for one lock; three times, the holder " +
				"is killed inside its hold and every waiter but one stopped for 3 s: the lock expires unreleased " +
				"and the waiters ahead of the survivor in line stop renewing their places, which it must wait out " +
				"(2 s), not the stopped waiters themselves",
			Workers: 6, Wait: true, Duration: livenessDuration,
			Faults: func() []faults.Fault {
				return []faults.Fault{faults.StrandWaiters{Stop: strandStop, Every: time.Second}}
			},
		},
		{
			Name: "liveness/semaphore-dead-first-waiter",
			About: "ten worker processes, each its own client, wait in Acquire for one of three permits of one " +
				"name; every 3 s the worker waiting longest, first in line, is killed: the releases keep naming " +
				"it first for as long as its place lasts (2 s), and the permits must go on to the others",
			Workers: 10, Limit: 3, Wait: true, ThinkMin: 100 * time.Millisecond, ThinkMax: 200 * time.Millisecond,
			Duration: livenessDuration,
			Faults: func() []faults.Fault {
				return []faults.Fault{faults.KillFirstWaiter{Every: deadWaiterEvery}}
			},
		},
		{
			Name: "liveness/semaphore-two-dead-first-waiters",
			About: "ten worker processes, each its own client, wait in Acquire for one of three permits of one " +
				"name; every 3 s the two workers waiting longest, first and second in line, are killed together: " +
				"the next release names both, and the permits must go on to the others once their places, " +
				"which that release shortened, lapse",
			Workers: 10, Limit: 3, Wait: true, ThinkMin: 100 * time.Millisecond, ThinkMax: 200 * time.Millisecond,
			Duration: livenessDuration,
			Faults: func() []faults.Fault {
				return []faults.Fault{faults.KillFirstWaiter{Every: deadWaiterEvery, Together: 2}}
			},
		},
		{
			Name: "liveness/multikey-random-3-of-10",
			About: "eight worker processes, each its own client of two goroutines, wait in AcquireAll for three of " +
				"ten names chosen at random for each acquisition",
			Workers: 8, Goroutines: 2, Wait: true, NameSets: [][]string{livenessNames}, Pick: 3, Duration: multikeyLivenessDuration,
		},
	}
}
