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
		if s.About == "" || s.Faults == nil && !slices.Contains(strings.Split(s.Name, "/"), "no-faults") && !isLiveness(s) {
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
		"markready-after-restart/empty":                          scenario.Hold,
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

// workloads are the prefixes of the families of another workload than the
// lock's.
var workloads = []string{"semaphore/", "rwlock/", "multikey/"}

// isLiveness reports whether s is a row that no family mirrors, each a
// workload of its own: the "liveness/" rows, built to find waiters that
// wait for ever, the "election/" rows of a leader election, and the
// "lockdelay/" rows of a lock-delay.
func isLiveness(s scenario.Scenario) bool {
	return slices.ContainsFunc([]string{"liveness/", "election/", "lockdelay/"}, func(p string) bool { return strings.HasPrefix(s.Name, p) })
}

// Each family of another workload has a row for every row of the lock, and
// only those, with the lock row's expected verdict and register: holding
// where the lock holds, caught where it is caught, on the same faults.
func TestTable_familiesMirrorEveryRowOfTheLock(t *testing.T) {
	table := scenario.Table()
	seen := map[string]scenario.Scenario{}
	for _, s := range table {
		seen[s.Name] = s
	}
	lockRows, livenessRows := 0, 0
	for _, s := range table {
		if isLiveness(s) {
			livenessRows++
			continue
		}
		if slices.ContainsFunc(workloads, func(p string) bool { return strings.HasPrefix(s.Name, p) }) {
			continue
		}
		lockRows++
		for _, prefix := range workloads {
			v, ok := seen[prefix+s.Name]
			if !ok {
				t.Errorf("no scenario %s%s", prefix, s.Name)
				continue
			}
			if v.Expect != s.Expect || v.Register != s.Register || v.RedisCluster != s.RedisCluster {
				t.Errorf("%s: expected %s on %s, want %s on %s as the lock's", v.Name, v.Expect, v.Register, s.Expect, s.Register)
			}
		}
	}
	if want := lockRows*(1+len(workloads)) + livenessRows; len(table) != want {
		t.Errorf("the table has %d rows, want %d: the lock's %d, each family's mirror of them, and %d liveness rows",
			len(table), want, lockRows, livenessRows)
	}
}

// The rows of a family, named by a prefix, are what the prefix says.
func TestTable_familiesAreWhatTheirNamesSay(t *testing.T) {
	for _, s := range scenario.Table() {
		if isLiveness(s) {
			continue
		}
		name := s.Name
		parts := strings.Split(name, "/")
		if slices.Contains(parts, "renew") && (!s.Renew || s.ThinkMax <= scenario.DefaultTTL) {
			t.Errorf("%s: a renew row must renew and think for longer than the TTL", name)
		}
		if slices.Contains(parts, "rediscluster") != s.RedisCluster {
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
	if s.HoldMargin > 0 {
		checkSetsMeet(t, s)
	}
}

// checkSetsMeet checks that every two workers of s take sets that share a
// name, as they must when holders keep their locks to the end of their
// validity: two disjoint sets taken again at once would starve the others.
func checkSetsMeet(t *testing.T, s scenario.Scenario) {
	t.Helper()
	workers := s.WithDefaults().Workers
	for i := range workers {
		for j := range i {
			if !slices.ContainsFunc(s.Names(i, "k"), func(n string) bool { return slices.Contains(s.Names(j, "k"), n) }) {
				t.Errorf("%s: workers %d and %d take disjoint sets, and hold them to the end of their validity", s.Name, j, i)
			}
		}
	}
}

// A fault that picks a key before any grant picks one the workers take.
func TestScenario_Key(t *testing.T) {
	table := scenario.Table()
	for name, want := range map[string]string{
		"rediscluster/shard-failover":           "k",
		"semaphore/rediscluster/shard-failover": "k:permit:1",
		"rwlock/rediscluster/shard-failover":    "k",
		"multikey/rediscluster/shard-failover":  "k:b",
	} {
		s, err := scenario.Select(table, "^"+name+"$")
		if err != nil {
			t.Fatal(err)
		}
		if got := s[0].Key("k"); got != want {
			t.Errorf("%s: Key(k) = %q, want %q", name, got, want)
		}
		if names := s[0].Names(0, "k"); names != nil && !slices.Contains(names, want) {
			t.Errorf("%s: worker 0 takes %v, not %q", name, names, want)
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
