// Package scenario is the torture harness's table of scenarios: what load
// runs, which faults hit it, and what the checkers are expected to find.
//
// A scenario expected to hold must end with no violation in any checker it
// is judged by; one expected to be caught must end with at least one. The
// harness fails when a verdict differs from its expectation in either
// direction, so the table documents, and guards, both what the lock
// guarantees and where its guarantees end.
package scenario

import (
	"fmt"
	"regexp"
	"time"

	"github.com/redlock-go/redlock/torture/check"
	"github.com/redlock-go/redlock/torture/faults"
	"github.com/redlock-go/redlock/torture/traffic"
)

// Expect is a scenario's expected verdict.
type Expect int

const (
	// Hold: the checkers find no violation.
	Hold Expect = iota
	// Caught: the checkers find at least one violation.
	Caught
)

// String returns "hold" or "caught".
func (e Expect) String() string {
	if e == Caught {
		return "caught"
	}
	return "hold"
}

// Defaults for Scenario fields left zero. Short TTLs make expiry, pauses
// past validity and quarantines fit in a run of a few seconds; the node
// timeout stays at the library's 50 ms, a tenth of the TTL.
const (
	DefaultWorkers  = 4
	DefaultTTL      = 500 * time.Millisecond
	DefaultDuration = 4 * time.Second
	DefaultThinkMin = 1 * time.Millisecond
	DefaultThinkMax = 5 * time.Millisecond
	DefaultRetryMin = 2 * time.Millisecond
	DefaultRetryMax = 10 * time.Millisecond
)

// Scenario is one row of the table.
type Scenario struct {
	// Name identifies the scenario; variants on a fenced register end in
	// "/fenced" or "/write-fenced".
	Name string
	// About says in one sentence what happens and why the verdict is
	// expected.
	About string
	// Expect is the expected verdict.
	Expect Expect
	// Register is the register's mode.
	Register traffic.Mode

	// Workers is the number of worker processes (DefaultWorkers).
	Workers int
	// Goroutines is how many goroutines of each worker share its lock
	// client; 0 means one.
	Goroutines int
	// Wait makes workers wait in Client.Acquire instead of making one
	// attempt at a time (see traffic.Config.Wait).
	Wait bool
	// Limit makes workers take one of Limit permits of the lock's name (a
	// counting semaphore, see traffic.Config.Limit) instead of the lock;
	// 0 takes the lock.
	Limit int
	// ReaderGoroutines makes the last ReaderGoroutines goroutines of every
	// worker take the lock's name shared, as readers, through the worker's
	// one client, and the others take it as writers (see
	// traffic.Config.SharedGoroutines); 0 leaves that to Readers.
	ReaderGoroutines int
	// Readers makes the last Readers workers take the lock's name shared,
	// as readers of a read-write lock that only read the register (see
	// traffic.Config.Shared), and the others take it as writers; 0 takes
	// the lock. Worker 0 is a writer as long as Readers < Workers.
	Readers int
	// NameSets makes worker i take the locks of the names in
	// NameSets[i mod len(NameSets)] together (see traffic.Config.Names),
	// each guarding a register of its own, instead of the lock; the names
	// are suffixes of the lock's name. Nil takes the lock.
	NameSets [][]string
	// Pick makes every worker take Pick names chosen at random, afresh for
	// each acquisition, from its set of NameSets instead of the whole set
	// (see traffic.Config.Pick); 0 takes the whole set.
	Pick int
	// Duration is how long the load and faults run (DefaultDuration).
	Duration time.Duration
	// TTL is the lock TTL (DefaultTTL).
	TTL time.Duration
	// ThinkMin and ThinkMax bound the time between a worker's read and its
	// write (DefaultThinkMin, DefaultThinkMax).
	ThinkMin, ThinkMax time.Duration
	// Renew makes workers hold with auto-renewal and stop writing once the
	// lock is lost (see traffic.Config.Renew); ThinkMax should then exceed
	// the TTL.
	Renew bool
	// Elect makes workers candidates of the leader election on the lock's
	// name, each lead held as Renew holds a lock (see traffic.Config.Elect);
	// it needs Renew and Wait.
	Elect bool
	// Observe makes every worker also follow that election and record
	// what it sees, for the Observed checker (see traffic.Config.Observe).
	Observe bool
	// LockDelay is every acquisition's lock-delay (redlock.WithLockDelay);
	// the nodes' recovery delay is then the TTL plus it, as the library
	// requires.
	LockDelay time.Duration
	// RetryPause, if set, is the pause of the lock clients' own retry
	// strategy after a refused attempt in Acquire (between half of it and
	// all of it), in place of the library's default
	// (traffic.Config.RetryPause).
	RetryPause time.Duration
	// Rueidis makes the workers' lock clients talk to the nodes over the
	// rueidis adapter instead of go-redis (traffic.Config.Rueidis).
	Rueidis bool
	// HoldMargin makes workers hold the lock until this long before its
	// validity deadline; 0 releases right after the write.
	HoldMargin time.Duration
	// DisableQuarantine turns the restart quarantine off.
	DisableQuarantine bool
	// AppendFsyncAlways gives every node appendfsync always.
	AppendFsyncAlways bool
	// AppendFsyncEverysec gives every node appendonly yes with appendfsync
	// everysec, Redis's recommended persistence: a crash of the process
	// loses nothing, a power loss up to a second of writes.
	AppendFsyncEverysec bool
	// ClockShim runs the nodes with the clock shim preloaded.
	ClockShim bool
	// Replicas gives every node a replica that a failover can promote (see
	// cluster.Pair), or every master of a Redis Cluster a replica of its
	// own.
	Replicas bool
	// Sentinel lists the nodes (Replicas needed) that a redis-sentinel
	// watches and workers reach through it, as Sentinel-managed masters
	// (see cluster.Options.Sentinel).
	Sentinel []int
	// WaitReplicas makes a grant on a node count only once that many of
	// its replicas confirmed it (the lock client's Options.WaitReplicas).
	WaitReplicas int
	// RedisCluster makes the one lock node a Redis Cluster of three masters
	// (see cluster.Options.RedisCluster), which workers reach directly:
	// only faults on processes and slots apply, not those on links.
	RedisCluster bool
	// Faults returns the faults to inject, fresh for each run.
	Faults func() []faults.Fault
}

// Judged returns the checkers whose violations decide the verdict. On a
// fenced register that is the register and the fencing order: fencing is
// there to keep the protected resource correct even when two clients hold
// the lock at once, so the lock checkers are reported but not judged.
func (s Scenario) Judged() []check.Kind {
	if s.Register != traffic.Unfenced {
		return []check.Kind{check.LostUpdate, check.FenceOrder}
	}
	return check.Kinds
}

// Shared reports whether worker i takes the lock's name shared (see
// Readers).
func (s Scenario) Shared(i int) bool {
	return s.Readers > 0 && i >= s.WithDefaults().Workers-s.Readers
}

// Names returns the names worker i takes together, lockName+":"+suffix
// for each suffix of its set (see NameSets), or nil when it takes the lock.
func (s Scenario) Names(i int, lockName string) []string {
	if len(s.NameSets) == 0 {
		return nil
	}
	set := s.NameSets[i%len(s.NameSets)]
	names := make([]string, len(set))
	for j, suffix := range set {
		names[j] = lockName + ":" + suffix
	}
	return names
}

// Key returns a lock key the workers take, for the faults that must pick
// one before any grant (faults.Env.Key): lockName; with Limit, its first
// permit's, lockName:permit:1; with NameSets, the first name of worker
// 0's set.
func (s Scenario) Key(lockName string) string {
	switch {
	case s.Limit > 0:
		return lockName + ":permit:1"
	case len(s.NameSets) > 0:
		return s.Names(0, lockName)[0]
	}
	return lockName
}

// WithDefaults returns s with its zero fields set to the defaults.
func (s Scenario) WithDefaults() Scenario {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if s.Workers == 0 {
		s.Workers = DefaultWorkers
	}
	def(&s.Duration, DefaultDuration)
	def(&s.TTL, DefaultTTL)
	def(&s.ThinkMin, DefaultThinkMin)
	def(&s.ThinkMax, DefaultThinkMax)
	if s.Faults == nil {
		s.Faults = func() []faults.Fault { return nil }
	}
	return s
}

// Select returns the scenarios of table whose names match the regular
// expression pattern ("" matches all).
func Select(table []Scenario, pattern string) ([]Scenario, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	var out []Scenario
	for _, s := range table {
		if re.MatchString(s.Name) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("scenario: no scenario matches %q", pattern)
	}
	return out, nil
}
