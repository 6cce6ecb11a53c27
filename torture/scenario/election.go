package scenario

import (
	"time"

	"github.com/redlock-go/redlock/torture/faults"
)

// electionThinkMin and electionThinkMax make each lead outlast the TTL, so
// that it renews, while three candidates still get their turns well
// within the bound on waiting.
const (
	electionThinkMin = 550 * time.Millisecond
	electionThinkMax = 800 * time.Millisecond
)

// electionRows returns the "election/" rows: three candidates campaign in
// one leader election (redlock.Election), each leading for longer than
// the TTL while the lead renews, resigning, and campaigning again; every
// worker also observes the election. At most one leader at any time by
// the validity windows (Overlap, Linearizable), terms strictly increasing
// (FenceOrder), no write by a leader that lost the lead (LostUpdate), and
// each observer's leaders in term order (Observed), under faults of the
// leader (killed, paused, cut off; leader-kills: one leader after another,
// with retry pauses that only the candidates' reads of the nodes make up
// for) and of the nodes. Candidates are held to the bound of workers
// that loop TryAcquire, not of waiters in Acquire: an election promises no
// candidate its turn, only that it does not stay vacant for long while
// candidates campaign.
func electionRows() []Scenario {
	elect := func(name, about string, fs func() []faults.Fault) Scenario {
		return Scenario{
			Name: "election/" + name, About: about,
			Workers: 3, Elect: true, Observe: true, Renew: true,
			ThinkMin: electionThinkMin, ThinkMax: electionThinkMax, Duration: renewDuration,
			Faults: fs,
		}
	}
	return []Scenario{
		elect("no-faults", "three candidates campaign, lead past the TTL with renewal, resign and campaign again, on five healthy nodes", nil),
		elect("leader-pause", "the leader is SIGSTOPped inside its lead for twice the TTL: it stops renewing, "+
			"the next is elected once its lock expires, and when it resumes it knows it lost the lead and does not write",
			func() []faults.Fault {
				return []faults.Fault{faults.PauseWorkerAtRead{Worker: 0, Cooldown: 200 * time.Millisecond}}
			}),
		elect("leader-kill", "the leader is killed with SIGKILL inside its lead: it never resigns, and the next "+
			"candidate is elected once its lock expires",
			func() []faults.Fault { return []faults.Fault{faults.KillWorkerAtRead{Worker: 0}} }),
		elect("leader-partition", "the leader is cut off from every node inside its lead for twice the TTL: "+
			"its renewals fail, it learns from its own clock that it lost the lead before anyone else is elected",
			func() []faults.Fault {
				return []faults.Fault{faults.IsolateWorkerAtRead{Worker: 0, Cooldown: 200 * time.Millisecond}}
			}),
		{
			Name: "election/leader-kills", About: "eight candidates whose retry pauses are 12 s campaign for the whole row; " +
				"six leaders, one after another, are killed with SIGKILL at their first read: nobody resigns, and each next " +
				"leader is elected within the bound past the dead lead's expiry, which the waiting candidates must learn of " +
				"from their own reads of the nodes, failover after failover",
			Workers: 8, Elect: true, Observe: true, Renew: true, RetryPause: longRetryPause,
			ThinkMin: electionThinkMin, ThinkMax: electionThinkMax, Duration: 10 * time.Second,
			Faults: func() []faults.Fault {
				return []faults.Fault{faults.KillLeadersAtRead{Kills: 6}}
			},
		},
		elect("minority-kill", "kill -9 one or two nodes and restart them empty while candidates campaign and lead", minorityKill),
		elect("node-pause", "SIGSTOP one or two nodes for up to 700 ms while candidates campaign and lead",
			func() []faults.Fault {
				return []faults.Fault{faults.PauseNodes{PauseMin: 50 * time.Millisecond, PauseMax: 700 * time.Millisecond,
					GapMin: 100 * time.Millisecond, GapMax: 400 * time.Millisecond}}
			}),
		elect("minority-partition", "cut one or two nodes off from every candidate and observer, then heal",
			func() []faults.Fault {
				return []faults.Fault{faults.Partition{DurMin: 200 * time.Millisecond, DurMax: 800 * time.Millisecond,
					GapMin: 100 * time.Millisecond, GapMax: 400 * time.Millisecond}}
			}),
	}
}

// lockDelayRows returns the "lockdelay/" rows: holders of a lock with a
// lock-delay (redlock.WithLockDelay) paused past their validity, whose
// late writes must reach the unfenced register before the next holder's
// first, as the same pause without the delay (worker-pause-past-validity)
// is caught losing updates.
func lockDelayRows() []Scenario {
	return []Scenario{{
		Name: "lockdelay/holder-pause",
		About: "a holder is SIGSTOPped between its read and its write for twice the TTL; the lock's delay of " +
			"three TTLs keeps the next holder out until its late write landed, so no update is lost",
		LockDelay: 3 * DefaultTTL,
		Faults: func() []faults.Fault {
			return []faults.Fault{faults.PauseWorkerAtRead{Worker: 0, Cooldown: 200 * time.Millisecond}}
		},
	}}
}
