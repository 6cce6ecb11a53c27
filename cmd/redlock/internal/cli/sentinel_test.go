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
}
