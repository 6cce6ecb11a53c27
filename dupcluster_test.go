package redlock_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// One Redis Cluster listed twice, through different seed nodes, or once
// whole and once by the plain URL of one of its masters, fails Dial with
// ErrDuplicateNode naming both entries, with either adapter: whichever node
// of the cluster answers, the entries share the cluster's node ids.
func TestDial_oneRedisClusterListedTwice(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	other := redlocktest.Start(t, redlocktest.Options{Nodes: 1}).URLs()[0]
	addrs := cluster.Addrs()
	whole := "redis://" + addrs[0] + "?cluster=1"
	for _, c := range []struct {
		name, second, secondName string
	}{
		{"twoSeeds", "redis://" + addrs[1] + "?cluster=1&addr=" + addrs[2], addrs[1]},
		{"wholeAndOneMaster", "redis://" + addrs[2], addrs[2]},
	} {
		forEachDialer(t, func(t *testing.T, d dialer) {
			// Each dial asks a node chosen at random: a few dials make a
			// lucky pass of a check by run_id unlikely.
			for range 4 {
				client, err := d.dial(bg, []string{whole, c.second, other}, nil)
				if err == nil {
					client.Close()
					t.Fatalf("%s: Dial of one cluster listed twice succeeded", c.name)
				}
				if !errors.Is(err, redlock.ErrDuplicateNode) || !strings.Contains(err.Error(), addrs[0]) || !strings.Contains(err.Error(), c.secondName) {
					t.Fatalf("%s: Dial = %v, want ErrDuplicateNode naming both entries", c.name, err)
				}
			}
		})
	}
}

// A node list that names one master of a Redis Cluster by a plain URL, as
// if it were a server of its own, fails Dial with ErrInvalidURL saying to
// name the whole cluster: its locks' keys would hash to slots that other
// masters serve, and every request for them would fail.
func TestDial_oneMasterOfARedisClusterAsAServer(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	others := redlocktest.Start(t, redlocktest.Options{Nodes: 2}).URLs()
	master := "redis://" + cluster.Addrs()[1]
	forEachDialer(t, func(t *testing.T, d dialer) {
		client, err := d.dial(bg, append([]string{master}, others...), nil)
		if err == nil {
			client.Close()
			t.Fatal("Dial of a cluster master by a plain URL succeeded")
		}
		if !errors.Is(err, d.errInvalidURL) || !strings.Contains(err.Error(), cluster.Addrs()[1]) || !strings.Contains(err.Error(), "cluster=1") {
			t.Fatalf("Dial = %v, want ErrInvalidURL naming the node and saying to add cluster=1", err)
		}
	})
}
