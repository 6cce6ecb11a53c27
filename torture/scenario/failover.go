package scenario

import (
	"time"

	"github.com/redlock-go/redlock/torture/faults"
)

// failoverCooldown is the least time from one failover to the next
// rejoin of the old master; failoverDuration gives the rounds (failover,
// cooldown, rejoin, catch-up) time to repeat a few times.
const (
	failoverCooldown = 500 * time.Millisecond
	failoverDuration = 8 * time.Second
)

// failover splits the quorum and fails the shared node over to its replica
// right after each grant.
func failover(f faults.FailoverOnGrant) func() []faults.Fault {
	f.Node, f.Cooldown = 2, failoverCooldown
	return func() []faults.Fault { return []faults.Fault{&faults.SplitQuorum{}, f} }
}

// failovers returns the failover scenarios expected to hold and to be
// caught: a master grants a lock, dies, and its replica takes its place
// under the same address, with or without the lock.
func failovers() (holds, caught []Scenario) {
	base := Scenario{
		Replicas: true, Duration: failoverDuration,
		ThinkMin: restartThinkMin, ThinkMax: restartThinkMax,
	}
	lagging := base
	lagging.Name = "failover-lagging-replica"
	lagging.About = "split quorum; the shared node's replica is cut off from it for a TTL, the node grants a lock, dies and the " +
		"replica takes its place without the lock: the quarantine sees another process and keeps it from voting"
	// The link stays cut for a TTL before the grant, so that every lock the
	// replica copied has expired on it.
	lagging.Faults = failover(faults.FailoverOnGrant{Lagging: true, CutFor: DefaultTTL})

	noQuarantine := lagging
	noQuarantine.Name += "/no-quarantine"
	noQuarantine.About = "split quorum; the shared node's replica is cut off from it for a TTL, the node grants a lock, dies and " +
		"the replica takes its place without the lock and votes at once (no quarantine)"
	noQuarantine.Expect, noQuarantine.DisableQuarantine = Caught, true

	wait := base
	wait.Name = "failover-replica/wait"
	wait.About = "split quorum, no quarantine, grants wait for one replica; the shared node grants a lock, dies and its " +
		"replica, which confirmed the grant, takes its place with the lock"
	wait.DisableQuarantine, wait.WaitReplicas = true, 1
	wait.Faults = failover(faults.FailoverOnGrant{})

	lagWait := wait
	lagWait.Name = "failover-lagging-replica/wait"
	lagWait.About = "split quorum, no quarantine, grants wait for one replica; the shared node's replica is cut off from it " +
		"300 ms after catching up, so no grant counts there, and 50 ms later the replica takes the node's place"
	lagWait.Faults = failover(faults.FailoverOnGrant{Lagging: true, LinkUp: 300 * time.Millisecond, GrantWait: 50 * time.Millisecond})
	sentinelHolds, sentinelCaught := sentinelFailovers()
	return []Scenario{lagging, wait, lagWait, sentinelHolds}, []Scenario{noQuarantine, sentinelCaught}
}

// sentinelTTL, sentinelThinkMin and sentinelThinkMax make holders keep the
// lock longer than a Sentinel takes to promote a replica after the master
// died (1.5 to 2.5 s with cluster's 1 s down-after), so that the failover
// happens while the lock is held. The cut of a TTL before the grant, and
// up to a hold until it, must stay within what the Sentinel allows a
// replica to be promoted after (ten times the down-after, 10 s).
// sentinelDuration leaves time for two rounds of a cut, a grant, a
// failover and a rejoin.
const (
	sentinelTTL = 4 * time.Second
	// sentinelRecut is how long the link stays cut past a TTL before it is
	// cut anew without a grant: the Sentinel (down-after 1 s, see
	// cluster.sentinelDownAfter) promotes no replica cut off for ten
	// seconds, and the kill and the promotion take a second or two.
	sentinelRecut    = 4 * time.Second
	sentinelThinkMin = 3 * time.Second
	sentinelThinkMax = 3500 * time.Millisecond
	sentinelDuration = 20 * time.Second
)

// sentinelFailovers returns the scenarios in which a real redis-sentinel
// fails the shared node over, expected to hold and to be caught: the
// shared node is a Sentinel-managed master that the workers reach through
// the Sentinel; its replica is cut off for a TTL, the master grants a
// lock and is killed, and the Sentinel promotes the replica.
func sentinelFailovers() (holds, caught Scenario) {
	holds = Scenario{
		Name: "sentinel-failover-lagging-replica",
		About: "split quorum; the shared node is a Sentinel-managed master whose replica is cut off from it for a TTL; " +
			"it grants a lock and dies, and the Sentinel promotes the replica, which lacks the lock: " +
			"the quarantine sees another process and keeps it from voting",
		Replicas: true, Sentinel: []int{2},
		TTL: sentinelTTL, Duration: sentinelDuration, ThinkMin: sentinelThinkMin, ThinkMax: sentinelThinkMax,
		Faults: failover(faults.FailoverOnGrant{Sentinel: true, Lagging: true, CutFor: sentinelTTL, Recut: sentinelRecut}),
	}
	caught = holds
	caught.Name += "/no-quarantine"
	caught.About = "split quorum; the shared node is a Sentinel-managed master whose replica is cut off from it for a TTL; " +
		"it grants a lock and dies, and the Sentinel promotes the replica, which lacks the lock and votes at once (no quarantine)"
	caught.Expect, caught.DisableQuarantine = Caught, true
	return holds, caught
}
