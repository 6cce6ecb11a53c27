package identity_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/internal/identity"
	"github.com/redlock-go/redlock/redlocktest"
)

// node is a redlocktest.Node as a Doer.
type node struct{ *redlocktest.Node }

func (n node) Do(ctx context.Context, args ...string) (any, error) { return n.Node.Do(ctx, args...) }

// A standalone server is its run_id alone, read by INFO server: CLUSTER
// MYID is not asked of it. A server in cluster mode is its run_id and its
// cluster node id.
func TestOf_standaloneAndClusterMode(t *testing.T) {
	ctx := t.Context()
	plain := redlocktest.Start(t, redlocktest.Options{Nodes: 1}).Node(0)
	if _, err := plain.Do(ctx, "CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
	ids, err := identity.Of(ctx, node{plain})
	if err != nil || len(ids) != 1 || !strings.HasPrefix(ids[0], "run_id ") || len(ids[0]) != len("run_id ")+40 {
		t.Fatalf("Of a standalone server = %q, %v; want its run_id alone", ids, err)
	}
	stats, err := plain.Do(ctx, "INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stats, "cmdstat_cluster") {
		t.Errorf("CLUSTER asked of a standalone server:\n%s", stats)
	}

	master := redlocktest.Start(t, redlocktest.Options{Nodes: 3, RedisCluster: true}).Node(0)
	ids, err = identity.Of(ctx, node{master})
	if err != nil || len(ids) != 2 || !strings.HasPrefix(ids[0], "run_id ") || !strings.HasPrefix(ids[1], "cluster node ") {
		t.Fatalf("Of a server in cluster mode = %q, %v; want its run_id and cluster node id", ids, err)
	}
}

// Admit reports the first entry that had one of the identities, and
// records the new ones either way.
func TestRegistry_admit(t *testing.T) {
	var r identity.Registry
	if _, _, dup := r.Admit(0, []string{"run_id a", "cluster node x"}); dup {
		t.Fatal("the first entry is a duplicate")
	}
	if _, _, dup := r.Admit(1, []string{"run_id b"}); dup {
		t.Fatal("a server of its own is a duplicate")
	}
	if _, _, dup := r.Admit(0, []string{"run_id a"}); dup {
		t.Fatal("an entry admitted again is its own duplicate")
	}
	first, id, dup := r.Admit(2, []string{"run_id c", "cluster node x"})
	if !dup || first != 0 || id != "cluster node x" {
		t.Fatalf("Admit = %d, %q, %v; want entry 0's cluster node x", first, id, dup)
	}
	if first, _, dup := r.Admit(3, []string{"run_id c"}); !dup || first != 2 {
		t.Fatalf("Admit = %d, %v; want entry 2, whose new identity was recorded", first, dup)
	}
}
