package scenario_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/torture/check"
	"github.com/redlock-go/redlock/torture/scenario"
	"github.com/redlock-go/redlock/torture/traffic"
)

func TestTable_coversTheRequiredCases(t *testing.T) {
	table := scenario.Table()
	seen := map[string]scenario.Scenario{}
	for _, s := range table {
		if _, dup := seen[s.Name]; dup {
			t.Fatalf("duplicate scenario %q", s.Name)
		}
		seen[s.Name] = s
		if s.About == "" || s.Faults == nil && !slices.Contains(strings.Split(s.Name, "/"), "no-faults") {
			t.Errorf("%s: missing description or faults", s.Name)
		}
		if s.Register == traffic.Unfenced && len(s.Judged()) != len(check.Kinds) {
			t.Errorf("%s: an unfenced scenario must be judged by every checker", s.Name)
		}
	}
	for name, want := range map[string]scenario.Expect{
		"no-faults": scenario.Hold, "no-faults/handoff": scenario.Hold, "minority-kill/handoff": scenario.Hold,
		"minority-kill": scenario.Hold, "minority-partition": scenario.Hold,
		"restart-quarantine": scenario.Hold, "restart-aof": scenario.Hold, "node-pause": scenario.Hold,
		"node-slow": scenario.Hold, "worker-pause-acquire": scenario.Hold, "skew-within-drift": scenario.Hold,
		"restart-empty": scenario.Caught, "worker-pause-past-validity": scenario.Caught,
		"clock-jump": scenario.Caught, "eviction": scenario.Caught,
		"restart-empty/fenced": scenario.Hold, "worker-pause-past-validity/fenced": scenario.Hold,
		"clock-jump/fenced": scenario.Hold, "eviction/fenced": scenario.Hold,
		"restart-everysec-powerloss":                             scenario.Hold,
		"restart-everysec-powerloss/no-quarantine":               scenario.Caught,
		"restart-everysec-powerloss/no-quarantine/fenced":        scenario.Hold,
		"markready-after-restart":                                scenario.Hold,
		"markready-after-restart/forced":                         scenario.Caught,
		"markready-after-restart/forced/fenced":                  scenario.Hold,
		"markready-after-restart/empty":                          scenario.Caught,
		"markready-after-restart/empty/fenced":                   scenario.Hold,
		"flapping-node":                                          scenario.Hold,
		"node-silent-10s":                                        scenario.Hold,
		"no-faults/crowd-64":                                     scenario.Hold,
		"one-way-partition":                                      scenario.Hold,
		"asymmetric-partition":                                   scenario.Hold,
		"renew/minority-kill":                                    scenario.Hold,
		"renew/node-pause":                                       scenario.Hold,
		"renew/minority-partition":                               scenario.Hold,
		"renew/minority-blackhole":                               scenario.Hold,
		"renew/worker-pause-at-read":                             scenario.Hold,
		"failover-lagging-replica":                               scenario.Hold,
		"failover-lagging-replica/no-quarantine":                 scenario.Caught,
		"failover-lagging-replica/no-quarantine/fenced":          scenario.Hold,
		"failover-replica/wait":                                  scenario.Hold,
		"failover-lagging-replica/wait":                          scenario.Hold,
		"rediscluster/shard-master-restart":                      scenario.Hold,
		"rediscluster/shard-master-restart/no-quarantine":        scenario.Caught,
		"rediscluster/shard-master-restart/no-quarantine/fenced": scenario.Hold,
		"rediscluster/reshard":                                   scenario.Hold,
		"rediscluster/shard-failover":                            scenario.Hold,
		"rediscluster/shard-failover/no-quarantine":              scenario.Caught,
		"rediscluster/shard-failover/no-quarantine/fenced":       scenario.Hold,
		"semaphore/no-faults":                                    scenario.Hold,
		"semaphore/minority-kill":                                scenario.Hold,
		"semaphore/minority-partition":                           scenario.Hold,
		"semaphore/node-pause":                                   scenario.Hold,
		"semaphore/node-slow":                                    scenario.Hold,
		"semaphore/restart-quarantine":                           scenario.Hold,
		"semaphore/restart-empty":                                scenario.Caught,
		"semaphore/restart-empty/fenced":                         scenario.Hold,
		"semaphore/worker-pause-past-validity":                   scenario.Caught,
		"semaphore/worker-pause-past-validity/fenced":            scenario.Hold,
		"rwlock/no-faults":                                       scenario.Hold,
		"rwlock/minority-kill":                                   scenario.Hold,
		"rwlock/minority-partition":                              scenario.Hold,
		"rwlock/node-pause":                                      scenario.Hold,
		"rwlock/node-slow":                                       scenario.Hold,
		"rwlock/restart-quarantine":                              scenario.Hold,
		"rwlock/restart-empty":                                   scenario.Caught,
		"rwlock/restart-empty/fenced":                            scenario.Hold,
		"rwlock/worker-pause-past-validity":                      scenario.Caught,
		"rwlock/worker-pause-past-validity/fenced":               scenario.Hold,
		"multikey/no-faults":                                     scenario.Hold,
		"multikey/minority-kill":                                 scenario.Hold,
		"multikey/minority-partition":                            scenario.Hold,
		"multikey/node-pause":                                    scenario.Hold,
		"multikey/node-slow":                                     scenario.Hold,
		"multikey/restart-quarantine":                            scenario.Hold,
		"multikey/restart-empty":                                 scenario.Caught,
		"multikey/restart-empty/fenced":                          scenario.Hold,
		"multikey/worker-pause-past-validity":                    scenario.Caught,
		"multikey/worker-pause-past-validity/fenced":             scenario.Hold,
	} {
		s, ok := seen[name]
		if !ok {
			t.Errorf("no scenario %q", name)
			continue
		}
		if s.Expect != want {
			t.Errorf("%s: expected %s, want %s", name, s.Expect, want)
		}
	}
	for _, s := range scenario.Short() {
		if seen[s.Name].Expect != s.Expect {
			t.Errorf("short %s differs from the table", s.Name)
		}
	}
}

// The rows of a family, named by a prefix, are what the prefix says.
func TestTable_familiesAreWhatTheirNamesSay(t *testing.T) {
	for _, s := range scenario.Table() {
		name := s.Name
		if strings.HasPrefix(name, "renew/") && (!s.Renew || s.ThinkMax <= scenario.DefaultTTL) {
			t.Errorf("%s: a renew row must renew and think for longer than the TTL", name)
		}
		if strings.HasPrefix(name, "rediscluster/") != s.RedisCluster {
			t.Errorf("%s: a rediscluster row, and only one, must lock on a Redis Cluster", name)
		}
		if strings.HasPrefix(name, "semaphore/") != (s.Limit > 0) || s.Limit > 0 && s.WithDefaults().Workers <= s.Limit {
			t.Errorf("%s: a semaphore row, and only one, must take permits, with more workers than permits", name)
		}
		// Worker 0, which the pause at the read stops, must write.
		if strings.HasPrefix(name, "rwlock/") != (s.Readers > 0) || s.Readers > 0 && (s.Shared(0) || !s.Shared(s.WithDefaults().Workers-1)) {
			t.Errorf("%s: an rwlock row, and only one, must have readers and writers, worker 0 a writer", name)
		}
		if strings.HasPrefix(name, "multikey/") != (len(s.NameSets) > 0) {
			t.Errorf("%s: a multikey row, and only one, must take sets of names", name)
		}
		checkNameSets(t, s)
	}
}

// checkNameSets checks that the sets of names of s are of two or three
// names each, and cross: every name is in more than one set, and every
// set meets another.
func checkNameSets(t *testing.T, s scenario.Scenario) {
	t.Helper()
	sets := map[string]int{}
	for i := range s.WithDefaults().Workers {
		names := s.Names(i, "k")
		if names == nil {
			return
		}
		if len(names) < 2 || len(names) > 3 {
			t.Errorf("%s: worker %d takes %v, want two or three names", s.Name, i, names)
		}
		for _, n := range names {
			sets[n]++
		}
	}
	for n, c := range sets {
		if c < 2 {
			t.Errorf("%s: %s is in %d set, want sets that cross", s.Name, n, c)
		}
	}
}

func TestSelect(t *testing.T) {
	got, err := scenario.Select(scenario.Table(), "^clock-jump")
	if err != nil || len(got) != 2 || got[0].Name != "clock-jump/fenced" || got[1].Name != "clock-jump" {
		t.Fatalf("Select(^clock-jump) = %d scenarios, %v", len(got), err)
	}
	if _, err := scenario.Select(scenario.Table(), "nothing-matches"); err == nil {
		t.Fatal("Select with no match succeeded")
	}
}
