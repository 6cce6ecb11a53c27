package nodecheck_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/internal/nodecheck"
	"github.com/redlock-go/redlock/internal/nodeurl"
	"github.com/redlock-go/redlock/redlocktest"
)

// Over five nodes, one that refuses the credentials fails the check, named
// with its answer and wrapping ErrInvalidURL; two that are down pass, and
// are returned with their errors.
func TestCheck_refusesARefusalAndReturnsNodesDown(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 5})
	ctx := context.Background()
	for _, n := range cluster.Nodes()[3:] {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	r, err := nodecheck.Check(ctx, newConns(t, cluster), nil, "redlock:released:check", true)
	down := r.Down
	if err != nil {
		t.Fatalf("two of five down: %v", err)
	}
	if len(down) != 2 || down[0].Node != 3 || down[1].Node != 4 || down[0].Err == nil || down[1].Err == nil {
		t.Errorf("Check returned %+v as down, want nodes 3 and 4 with their errors", down)
	}
	if _, err := cluster.Node(0).Do(ctx, "CONFIG", "SET", "requirepass", "s3cret"); err != nil {
		t.Fatal(err)
	}
	r, err = nodecheck.Check(ctx, newConns(t, cluster), nil, "redlock:released:check", true)
	if down = r.Down; !errors.Is(err, nodeurl.ErrInvalidURL) || !strings.Contains(err.Error(), cluster.Node(0).Addr()+": NOAUTH") || !strings.Contains(err.Error(), "credentials refused") || down != nil {
		t.Errorf("one of five refusing: %v, %v; want ErrInvalidURL naming %s", down, err, cluster.Node(0).Addr())
	}
}

// newConns returns a new Conn per node of cluster, closed at the end of
// the test: connections made earlier keep the credentials they were made
// with.
func newConns(t *testing.T, cluster *redlocktest.Cluster) []redlock.Conn {
	conns := make([]redlock.Conn, 0, len(cluster.Nodes()))
	for _, u := range cluster.URLs() {
		c, err := goredis.NewURL(u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns = append(conns, c)
	}
	return conns
}
