package scenario

import (
	"slices"
	"time"

	"github.com/redlock-go/redlock/torture/faults"
)

// renewThinkMin and renewThinkMax make renewing holders think longer than
// the TTL, so that every hold lives on extensions, two or three of them;
// renewDuration gives such slow cycles time for a few dozen grants.
const (
	renewThinkMin = 600 * time.Millisecond
	renewThinkMax = 1000 * time.Millisecond
	renewDuration = 6 * time.Second
)

// restartThinkMin and restartThinkMax lengthen the critical section in the
// restart scenarios, so that a node restart (some tens of milliseconds) can
// complete while the lock is held, which is when losing the key matters.
const (
	restartThinkMin = 100 * time.Millisecond
	restartThinkMax = 200 * time.Millisecond
)

// minorityKill kills one or two nodes at a time with kill -9 and restarts
// them empty.
func minorityKill() []faults.Fault {
	return []faults.Fault{faults.KillNodes{DownMin: 200 * time.Millisecond, DownMax: 800 * time.Millisecond,
		GapMin: 200 * time.Millisecond, GapMax: 600 * time.Millisecond}}
}

// powerLoss splits the quorum and makes the shared node lose power right
// after each grant, its append-only file back to its state before the grant.
func powerLoss() []faults.Fault {
	return []faults.Fault{&faults.SplitQuorum{}, faults.RestartOnGrant{Node: 2, Cooldown: 500 * time.Millisecond, PowerLoss: true}}
}

// Table returns the full scenario table, in report order: what must hold,
// what fencing must rescue, and what must be caught; in each part, the
// lock's rows and then those of each family of another workload, which
// mirror every row of the lock.
func Table() []Scenario {
	lock := lockRows()
	groups := []rows{lock}
	for _, f := range []family{semaphores, rwlocks, multikeys} {
		groups = append(groups, f.mirror(lock))
	}
	var holds, fenced, caught, writeFenced []Scenario
	for _, g := range groups {
		holds = append(holds, g.holds...)
		fenced = append(fenced, g.fenced()...)
		caught = append(caught, g.caught...)
		writeFenced = append(writeFenced, g.writeFenced())
	}
	return slices.Concat(holds, livenessRows(), electionRows(), lockDelayRows(), fenced, caught, writeFenced)
}

// lockRows returns the rows of the lock: one name taken by every worker,
// without WithLimit, WithShared or AcquireAll.
func lockRows() rows {
	holds := []Scenario{
		{
			Name:  "no-faults",
			About: "four workers contend for one lock on five healthy nodes",
		},
		{
			Name: "no-faults/handoff",
			About: "two workers of four goroutines each wait in Acquire for one lock on five healthy nodes; " +
				"a release hands the lock to the next goroutine of its client within one round trip",
			Workers: 2, Goroutines: 4, Wait: true,
		},
		{
			Name:    "minority-kill/handoff",
			About:   "handoffs between goroutines of two clients while one or two nodes are killed and restart empty",
			Workers: 2, Goroutines: 4, Wait: true,
			Faults: minorityKill,
		},
		{
			Name:   "minority-kill",
			About:  "kill -9 one or two nodes, restart them empty; the restart quarantine keeps them out of quorums for a TTL",
			Faults: minorityKill,
		},
		{
			Name:  "minority-partition",
			About: "cut one or two nodes off from every worker, then heal",
			Faults: func() []faults.Fault {
				return []faults.Fault{faults.Partition{DurMin: 200 * time.Millisecond, DurMax: 800 * time.Millisecond,
					GapMin: 100 * time.Millisecond, GapMax: 400 * time.Millisecond}}
			},
		},
		{
			Name:  "minority-blackhole",
			About: "drop all traffic to one or two nodes silently, so requests time out, then heal",
			Faults: func() []faults.Fault {
				return []faults.Fault{faults.Partition{Hold: true, DurMin: 200 * time.Millisecond, DurMax: 800 * time.Millisecond,
					GapMin: 100 * time.Millisecond, GapMax: 400 * time.Millisecond}}
			},
		},
		{
			Name: "flapping-node",
			About: "two workers of four goroutines each wait in Acquire while one node is blackholed for about 100 ms " +
				"at a time, over and over, with short gaps",
			Workers: 2, Goroutines: 4, Wait: true,
			Faults: func() []faults.Fault {
				return []faults.Fault{faults.Flap{DurMin: 80 * time.Millisecond, DurMax: 120 * time.Millisecond,
					GapMin: 20 * time.Millisecond, GapMax: 80 * time.Millisecond}}
			},
		},
		{
			Name: "one-way-partition",
			About: "drop only the requests, or only the replies, between every worker and one or two nodes, then heal: " +
				"a node whose replies are lost grants and releases without the worker hearing of it",
			Faults: func() []faults.Fault {
				return []faults.Fault{faults.OneWayPartition{DurMin: 200 * time.Millisecond, DurMax: 800 * time.Millisecond,
					GapMin: 100 * time.Millisecond, GapMax: 400 * time.Millisecond}}
			},
		},
		{
			Name:  "asymmetric-partition",
			About: "cut each worker off from its own one or two nodes at the same time, so that workers disagree on which nodes are up, then heal",
			Faults: func() []faults.Fault {
				return []faults.Fault{faults.AsymmetricPartition{DurMin: 200 * time.Millisecond, DurMax: 800 * time.Millisecond,
					GapMin: 100 * time.Millisecond, GapMax: 400 * time.Millisecond}}
			},
		},
		{
			Name:     "restart-quarantine",
			ThinkMin: restartThinkMin, ThinkMax: restartThinkMax,
			About: "split quorum; the shared node restarts empty while the lock is held on it, and the quarantine keeps it from voting for a TTL",
			Faults: func() []faults.Fault {
				return []faults.Fault{&faults.SplitQuorum{}, faults.RestartOnGrant{Node: 2, Cooldown: 500 * time.Millisecond}}
			},
		},
		{
			Name:     "restart-snapshot",
			ThinkMin: restartThinkMin, ThinkMax: restartThinkMax,
			About: "split quorum; the shared node crashes while the lock is held on it and reloads an RDB snapshot " +
				"taken before the grant, marker included: the quarantine sees another process and keeps it from voting",
			Faults: func() []faults.Fault {
				return []faults.Fault{&faults.SplitQuorum{}, faults.RestartOnGrant{Node: 2, Cooldown: 500 * time.Millisecond, Snapshot: true}}
			},
		},
		{
			Name:     "restart-everysec-powerloss",
			ThinkMin: restartThinkMin, ThinkMax: restartThinkMax,
			About: "split quorum, appendfsync everysec; the shared node loses power while the lock is held on it and " +
				"reloads its append-only file as it was before the grant, marker included: the quarantine sees another process",
			AppendFsyncEverysec: true,
			Faults:              powerLoss,
		},
		{
			Name:     "markready-after-restart",
			ThinkMin: restartThinkMin, ThinkMax: restartThinkMax,
			About: "split quorum; the shared node reloads a snapshot taken before the grant and a deploy script calls " +
				"MarkReady on the deployment at once: MarkReady refuses a restarted node unless forced, so the quarantine stays",
			Faults: func() []faults.Fault {
				return []faults.Fault{&faults.SplitQuorum{}, faults.RestartOnGrant{Node: 2, Cooldown: 500 * time.Millisecond,
					Snapshot: true, MarkReady: true}}
			},
		},
		{
			Name:     "markready-after-restart/empty",
			ThinkMin: restartThinkMin, ThinkMax: restartThinkMax,
			About: "split quorum; the shared node restarts empty while the lock is held on it and a deploy script calls " +
				"MarkReady on the deployment at once: the other nodes are ready, so it is not brand new and MarkReady refuses",
			Faults: func() []faults.Fault {
				return []faults.Fault{&faults.SplitQuorum{}, faults.RestartOnGrant{Node: 2, Cooldown: 500 * time.Millisecond, MarkReady: true}}
			},
		},
		{
			Name:     "restart-aof",
			ThinkMin: restartThinkMin, ThinkMax: restartThinkMax,
			About:             "split quorum; the shared node restarts while the lock is held on it, with appendfsync always and no quarantine",
			AppendFsyncAlways: true,
			DisableQuarantine: true,
			Faults: func() []faults.Fault {
				return []faults.Fault{&faults.SplitQuorum{}, faults.RestartOnGrant{Node: 2, Cooldown: 500 * time.Millisecond}}
			},
		},
		{
			Name:  "node-pause",
			About: "SIGSTOP one or two nodes for up to 700 ms during acquisitions",
			Faults: func() []faults.Fault {
				return []faults.Fault{faults.PauseNodes{PauseMin: 50 * time.Millisecond, PauseMax: 700 * time.Millisecond,
					GapMin: 100 * time.Millisecond, GapMax: 400 * time.Millisecond}}
			},
		},
		{
			Name: "node-silent-10s",
			About: "SIGSTOP one or two nodes for 10 s under waiting traffic: the clients keep granting on the others " +
				"with bounded queues, and the stopped nodes rejoin",
			Workers: 2, Goroutines: 4, Wait: true,
			Duration: 12 * time.Second,
			Faults: func() []faults.Fault {
				return []faults.Fault{faults.PauseNodes{PauseMin: 10 * time.Second, PauseMax: 10 * time.Second,
					GapMin: 500 * time.Millisecond, GapMax: 500 * time.Millisecond}}
			},
		},
		{
			Name: "no-faults/crowd-64",
			About: "64 worker processes, each its own client, wait in Acquire for one lock on five healthy nodes; " +
				"a release wakes the first two clients in the key's queue",
			Workers: 64, Wait: true,
		},
		{
			Name:  "node-slow",
			About: "40±20 ms latency each way to one or two nodes, around the 50 ms node timeout",
			Faults: func() []faults.Fault {
				return []faults.Fault{faults.SlowNodes{Latency: 40 * time.Millisecond, Jitter: 20 * time.Millisecond,
					DurMin: 300 * time.Millisecond, DurMax: 800 * time.Millisecond, GapMin: 100 * time.Millisecond, GapMax: 300 * time.Millisecond}}
			},
		},
		{
			Name:  "worker-pause-acquire",
			About: "SIGSTOP a worker in the middle of an acquisition for twice the TTL; its validity is gone when it resumes",
			Faults: func() []faults.Fault {
				return []faults.Fault{faults.PauseWorkerInAcquire{Worker: 0, Latency: 15 * time.Millisecond,
					DelayMin: 3 * time.Millisecond, DelayMax: 25 * time.Millisecond, Cooldown: 200 * time.Millisecond}}
			},
		},
		{
			Name:       "skew-within-drift",
			About:      "every node's clock runs 0.5% fast, inside the 1% drift allowance, while holders keep the lock to the end of its validity",
			ClockShim:  true,
			HoldMargin: time.Millisecond,
			Faults:     func() []faults.Fault { return []faults.Fault{faults.ClockSkew{PPM: 5000}} },
		},
	}
	caught := []Scenario{
		{
			Name:     "restart-empty",
			ThinkMin: restartThinkMin, ThinkMax: restartThinkMax,
			About:             "split quorum; the shared node restarts empty while the lock is held on it and votes at once (no quarantine)",
			Expect:            Caught,
			DisableQuarantine: true,
			Faults: func() []faults.Fault {
				return []faults.Fault{&faults.SplitQuorum{}, faults.RestartOnGrant{Node: 2, Cooldown: 500 * time.Millisecond}}
			},
		},
		{
			Name:     "restart-snapshot/no-quarantine",
			ThinkMin: restartThinkMin, ThinkMax: restartThinkMax,
			About:             "split quorum; the shared node reloads an RDB snapshot taken before the grant and votes at once (no quarantine)",
			Expect:            Caught,
			DisableQuarantine: true,
			Faults: func() []faults.Fault {
				return []faults.Fault{&faults.SplitQuorum{}, faults.RestartOnGrant{Node: 2, Cooldown: 500 * time.Millisecond, Snapshot: true}}
			},
		},
		{
			Name:     "restart-everysec-powerloss/no-quarantine",
			ThinkMin: restartThinkMin, ThinkMax: restartThinkMax,
			About: "split quorum, appendfsync everysec; the shared node loses power while the lock is held on it, " +
				"reloads its append-only file as it was before the grant and votes at once (no quarantine)",
			Expect:              Caught,
			AppendFsyncEverysec: true,
			DisableQuarantine:   true,
			Faults:              powerLoss,
		},
		{
			Name:     "markready-after-restart/forced",
			ThinkMin: restartThinkMin, ThinkMax: restartThinkMax,
			About: "split quorum; the shared node reloads a snapshot taken before the grant and a deploy script calls " +
				"MarkReady(force) on the deployment at once, ending its quarantine: it votes for the other group while the lock is held",
			Expect: Caught,
			Faults: func() []faults.Fault {
				return []faults.Fault{&faults.SplitQuorum{}, faults.RestartOnGrant{Node: 2, Cooldown: 500 * time.Millisecond,
					Snapshot: true, MarkReady: true, ForceReady: true}}
			},
		},
		{
			Name:   "worker-pause-past-validity",
			About:  "SIGSTOP a worker between its read and its write for twice the TTL; its late write overwrites newer updates",
			Expect: Caught,
			Faults: func() []faults.Fault {
				return []faults.Fault{faults.PauseWorkerAtRead{Worker: 0, Cooldown: 200 * time.Millisecond}}
			},
		},
		{
			Name:      "clock-jump",
			About:     "split quorum; the shared node's clock jumps 1 s forward, beyond the TTL, right after each grant",
			Expect:    Caught,
			ClockShim: true,
			Faults: func() []faults.Fault {
				return []faults.Fault{&faults.SplitQuorum{}, faults.ClockJumpOnGrant{Node: 2, Jump: time.Second, Cooldown: 100 * time.Millisecond}}
			},
		},
		{
			Name:   "eviction",
			About:  "maxmemory just above use with volatile-ttl and filler writes: lock keys, the closest to expiry, are evicted",
			Expect: Caught,
			Faults: func() []faults.Fault {
				return []faults.Fault{faults.Evict{Settle: 300 * time.Millisecond, Headroom: 1 << 20, ValueSize: 16 << 10, Every: 2 * time.Millisecond}}
			},
		},
		{
			Name:       "skew-beyond-drift",
			About:      "every node's clock runs 5% fast, beyond the 1% drift allowance, while holders keep the lock to the end of its validity",
			Expect:     Caught,
			ClockShim:  true,
			HoldMargin: time.Millisecond,
			Faults:     func() []faults.Fault { return []faults.Fault{faults.ClockSkew{PPM: 50000}} },
		},
	}
	failoverHolds, failoverCaught := failovers()
	holds, caught = append(holds, failoverHolds...), append(caught, failoverCaught...)
	clusterHolds, clusterCaught := redisClusters()
	holds, caught = append(holds, clusterHolds...), append(caught, clusterCaught...)
	holds = append(holds, renewals.of(holds, "minority-kill", "node-pause", "minority-partition", "minority-blackhole")...)
	holds = append(holds, Scenario{
		Name: "renew/worker-pause-at-read",
		About: "a renewing holder is SIGSTOPped between its read and its write for twice the TTL; " +
			"when it resumes its lock reports itself lost and it does not write",
		Renew:    true,
		ThinkMin: renewThinkMin, ThinkMax: renewThinkMax, Duration: renewDuration,
		Faults: func() []faults.Fault {
			return []faults.Fault{faults.PauseWorkerAtRead{Worker: 0, Cooldown: 200 * time.Millisecond}}
		},
	})
	return rows{holds: holds, caught: caught}
}

// Short returns a few scenarios of each kind with short runs, for the
// default test suite: one without faults, and one of handoffs between
// waiting goroutines; a restart that must hold with the quarantine and be
// caught without it; a pause past validity that must be caught on the
// unfenced register and hold on the fenced one.
func Short() []Scenario {
	want := map[string]bool{
		"no-faults": true, "no-faults/handoff": true, "restart-quarantine": true, "restart-empty": true,
		"worker-pause-past-validity": true, "worker-pause-past-validity/fenced": true,
	}
	var out []Scenario
	for _, s := range Table() {
		if want[s.Name] {
			// A row that must catch a violation keeps its full duration:
			// in 2.5 s on a slow, loaded machine restart-empty once saw 11
			// grants and no fault that met a held lock.
			if s.Expect != Caught {
				s.Duration = 2500 * time.Millisecond
			}
			out = append(out, s)
		}
	}
	return out
}

// byName returns the scenario of table named name; it panics if there is
// none, which is a mistake in the table.
func byName(table []Scenario, name string) Scenario {
	for _, s := range table {
		if s.Name == name {
			return s
		}
	}
	panic("scenario: no scenario named " + name)
}
