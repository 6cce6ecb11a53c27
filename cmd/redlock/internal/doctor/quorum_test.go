package doctor_test

import (
	"strings"
	"testing"

	"github.com/redlock-go/redlock/cmd/redlock/internal/doctor"
	"github.com/redlock-go/redlock/redlocktest"
)

// Two nodes, both reachable, tolerate no failure: a warning says so, and
// no finding asks to bring back nodes that none is.
func TestAudit_twoNodesAllReachable(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 2})
	conns := goredisConns(t, cluster.Addrs())
	markReady(t, conns)
	r := audit(t, conns, nil)
	if r.Reachable != 2 {
		t.Fatalf("%d of 2 nodes reachable", r.Reachable)
	}
	warned := false
	for _, f := range findings(r, "", "quorum") {
		if strings.Contains(f.Remedy, "unreachable") || strings.Contains(f.Message, "one more failure") {
			t.Errorf("every node is reachable, yet: %s", f)
		}
		warned = warned || (f.Severity == doctor.Warning && strings.Contains(f.Message, "one failure stops locking"))
	}
	if !warned {
		t.Errorf("no warning that one failure stops locking:\n%s", report(r))
	}
}
