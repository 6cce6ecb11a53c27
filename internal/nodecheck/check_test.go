package nodecheck_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/internal/nodecheck"
	"github.com/redlock-go/redlock/redlocktest"
)

// Over five nodes, two that refuse the credentials are tolerated (three
// still make the quorum) and each is logged; three fail the check, named.
func TestCheck_toleratesAMinorityOfRefusals(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 5})
	ctx := context.Background()
	for _, n := range cluster.Nodes()[:2] {
		if _, err := n.Do(ctx, "CONFIG", "SET", "requirepass", "s3cret"); err != nil {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	if err := nodecheck.Check(ctx, newConns(t, cluster), slog.New(slog.NewTextHandler(&log, nil)), nil); err != nil {
		t.Fatalf("two of five refusing: %v", err)
	}
	for _, n := range cluster.Nodes()[:2] {
		if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "node="+n.Addr()+" err=\"NOAUTH") {
			t.Errorf("the log does not warn about %s: %s", n.Addr(), log.String())
		}
	}
	if _, err := cluster.Node(2).Do(ctx, "CONFIG", "SET", "requirepass", "s3cret"); err != nil {
		t.Fatal(err)
	}
	err := nodecheck.Check(ctx, newConns(t, cluster), nil, nil)
	for _, n := range cluster.Nodes()[:3] {
		if err == nil || !strings.Contains(err.Error(), n.Addr()+": NOAUTH") {
			t.Errorf("three of five refusing: %v, want %s named", err, n.Addr())
		}
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
