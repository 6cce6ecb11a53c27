package scenario

import (
	"time"

	"github.com/redlock-go/redlock/torture/faults"
)

// The "rediscluster/" scenarios lock on one Redis Cluster of three masters,
// the whole cluster one Redlock node, so that a quorum is that one node.
// Workers reach the masters directly (see Scenario.RedisCluster), and the
// faults hit the master that serves the lock key's slot, found when they
// strike.

// shardRestartTTL is the TTL of the shard restart scenarios: a restarted
// master serves nothing for 2 s (Redis Cluster's own delay before a master
// that rejoins takes writes), so a holder must still hold the lock when
// the master serves again for the restart to matter. 3 s leaves holders,
// who keep the lock to shardRestartMargin before the end of its validity,
// most of a second past that delay under load; shardRestartDuration gives
// the quarantined row two grants, one quarantine apart.
const (
	shardRestartTTL      = 3 * time.Second
	shardRestartMargin   = 50 * time.Millisecond
	shardRestartDuration = 8 * time.Second
	shardRestartCooldown = time.Second
)

// reshardCooldown is the least time between two moves of the lock's slot:
// twice the default TTL, so that the slot sits out its quarantine on its
// new master and grants again before it moves on; reshardDuration gives it
// five moves.
const (
	reshardCooldown = 2 * DefaultTTL
	reshardDuration = 6 * time.Second
)

// shardFailoverTTL is the TTL of the shard failover scenarios: a
// cluster client finds the promoted replica once it reloads its slot map
// after a request without a reply, or once the old master, started again,
// redirects it there, some tens to a few hundred milliseconds after the
// kill, and a holder who keeps the lock to shardRestartMargin before the
// end of its validity must still hold it then. The replica is cut off for
// a TTL before the grant, so that every lock it copied has expired on it.
const (
	shardFailoverTTL      = time.Second
	shardFailoverDuration = 8 * time.Second
	shardFailoverCooldown = 200 * time.Millisecond
)

// redisClusters returns the Redis Cluster scenarios expected to hold and to
// be caught.
func redisClusters() (holds, caught []Scenario) {
	restart := Scenario{
		Name: "rediscluster/shard-master-restart",
		About: "the lock node is one Redis Cluster; the master of the lock's slot is killed right after a grant and " +
			"restarts empty: once it serves again, 2 s later, the slot's quarantine keeps it from granting for a TTL",
		RedisCluster: true,
		TTL:          shardRestartTTL, HoldMargin: shardRestartMargin, Duration: shardRestartDuration,
		Faults: func() []faults.Fault {
			return []faults.Fault{faults.RestartShardOnGrant{Cooldown: shardRestartCooldown}}
		},
	}
	noQuarantine := restart
	noQuarantine.Name += "/no-quarantine"
	noQuarantine.About = "the lock node is one Redis Cluster; the master of the lock's slot is killed right after a grant and " +
		"restarts empty: once it serves again, 2 s later, it grants the lock still held (no quarantine)"
	noQuarantine.Expect, noQuarantine.DisableQuarantine = Caught, true

	reshard := Scenario{
		Name: "rediscluster/reshard",
		About: "the lock node is one Redis Cluster; the lock's slot moves to the next master, keys and all, right after " +
			"each grant: the holder keeps the lock, and the slot sits out a quarantine on its new master",
		RedisCluster: true,
		ThinkMin:     restartThinkMin, ThinkMax: restartThinkMax, Duration: reshardDuration,
		Faults: func() []faults.Fault {
			return []faults.Fault{faults.ReshardOnGrant{Cooldown: reshardCooldown}}
		},
	}
	failover := Scenario{
		Name: "rediscluster/shard-failover",
		About: "the lock node is one Redis Cluster with replicas; the replica of the lock's master is cut off for a TTL, " +
			"the master grants a lock and is killed, and the replica takes its slots without the lock: the slot's " +
			"quarantine sees another process and keeps it from granting for a TTL",
		RedisCluster: true, Replicas: true,
		TTL: shardFailoverTTL, HoldMargin: shardRestartMargin, Duration: shardFailoverDuration,
		Faults: func() []faults.Fault {
			return []faults.Fault{faults.FailoverShardOnGrant{Lagging: true, CutFor: shardFailoverTTL, Cooldown: shardFailoverCooldown}}
		},
	}
	failoverNoQuarantine := failover
	failoverNoQuarantine.Name += "/no-quarantine"
	failoverNoQuarantine.About = "the lock node is one Redis Cluster with replicas; the replica of the lock's master is cut off " +
		"for a TTL, the master grants a lock and is killed, and the replica takes its slots without the lock and grants it " +
		"again at once (no quarantine)"
	failoverNoQuarantine.Expect, failoverNoQuarantine.DisableQuarantine = Caught, true
	return []Scenario{restart, reshard, failover}, []Scenario{noQuarantine, failoverNoQuarantine}
}
