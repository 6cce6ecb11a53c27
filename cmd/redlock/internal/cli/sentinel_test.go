package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/redlocktest"
)

// A Sentinel-managed master given as a node URL, with more Sentinels in
// addr parameters, is set up by init and audited by doctor like a server.
func TestDoctor_sentinelNode(t *testing.T) {
	master := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	others := redlocktest.Start(t, redlocktest.Options{Nodes: 2})
	watch := redlocktest.SentinelOptions{Masters: map[string]int{"locks": master.Node(0).Port()}}
	first, second := redlocktest.StartSentinel(t, watch).Addr(), redlocktest.StartSentinel(t, watch).Addr()
	node := fmt.Sprintf("redis://%s?master_name=locks&addr=%s", first, second)
	nodes := strings.Join(append([]string{node}, others.URLs()...), ",")
	cli(t, "init", "--nodes", nodes).expect(t, exitOK, "init with a Sentinel node")
	r := cli(t, "doctor", "--nodes", nodes).expect(t, exitOK, "doctor with a Sentinel node")
	wantDoctorSays(t, r.stdout, "locks@sentinel:"+first+","+second+"  up", "3 of 3 nodes reachable")
	// Its failovers need a replica and min-replicas-to-write (SAFETY.md):
	// the master has neither.
	wantDoctorSays(t, r.stdout, "no failover can replace it", "min-replicas-to-write 0")
	if strings.Count(r.stdout, "min-replicas-to-write 0") != 1 {
		t.Errorf("doctor warns of min-replicas-to-write for a node that is no Sentinel-managed master:\n%s", r.stdout)
	}
	if _, err := master.Node(0).Do(t.Context(), "CONFIG", "SET", "min-replicas-to-write", "1"); err != nil {
		t.Fatal(err)
	}
	r = cli(t, "doctor", "--nodes", nodes).expect(t, exitOK, "doctor with a Sentinel node")
	if strings.Contains(r.stdout, "min-replicas-to-write 0") {
		t.Errorf("doctor warns of min-replicas-to-write 0 on a master that has 1:\n%s", r.stdout)
	}
	// One Sentinel-managed node alone survives its master's crash.
	r = cli(t, "doctor", "--nodes", node).expect(t, exitOK, "doctor of one Sentinel node")
	wantDoctorSays(t, r.stdout, "its failover survives the crash of a master")
}
