package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	rueidisclient "github.com/redis/rueidis"
	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/rueidis"
)

// Redlock over three Sentinel-managed masters, each one node: the lock is
// granted by all three, and after one master fails over it is granted by
// the other two while the promoted replica sits out, with a greater
// fencing token. Either adapter.
func TestSentinel_redlockOverThreeSentinelMasters(t *testing.T) {
	t.Parallel()
	forEachDialer(t, func(t *testing.T, d dialer) {
		masters := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		replica := redlocktest.Start(t, redlocktest.Options{Nodes: 1,
			Config: []string{"replicaof 127.0.0.1 " + strconv.Itoa(masters.Node(0).Port())}})
		waitSynced(t, replica.Node(0))
		sentinel, urls := monitorEach(t, masters)
		opts := &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 300 * time.Millisecond, RecoveryDelay: 10 * time.Second}
		client, err := d.dial(bg, urls, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		if err := client.MarkReady(bg, false); err != nil {
			t.Fatal(err)
		}
		first, err := client.TryAcquire(bg, "job")
		if err != nil {
			t.Fatalf("over three Sentinel masters: %v", err)
		}
		// Acquire returns at a quorum: the last grant may still be on its way.
		for deadline := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
			states, err := client.Inspect(bg, "job")
			if err == nil && holders(states, first.Token()) == 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Inspect %+v, %v; want the lock on the three masters", states, err)
			}
		}
		if err := first.Release(bg); err != nil {
			t.Fatal(err)
		}

		if err := masters.Node(0).Kill(); err != nil {
			t.Fatal(err)
		}
		waitPromoted(t, sentinel, "locks0", replica.Node(0))
		lockWhileFirstNodeRecovers(t, client, first.Fence())
	})
}

// monitorEach starts a Sentinel that monitors each node of masters as
// "locks0", "locks1", ..., and returns it with the nodes' Sentinel URLs.
func monitorEach(t *testing.T, masters *redlocktest.Cluster) (*redlocktest.Sentinel, []string) {
	t.Helper()
	monitored := map[string]int{}
	for i, n := range masters.Nodes() {
		monitored["locks"+strconv.Itoa(i)] = n.Port()
	}
	sentinel := redlocktest.StartSentinel(t, redlocktest.SentinelOptions{Masters: monitored})
	var urls []string
	for i := range masters.Nodes() {
		urls = append(urls, sentinel.URL("locks"+strconv.Itoa(i)))
	}
	return sentinel, urls
}

// lockWhileFirstNodeRecovers takes the lock "job" on client until its first
// node, a promoted replica, answers recovering while the others grant, and
// checks each fencing token is above after. The client may need a moment
// to hear of the new master: until then the node errs.
func lockWhileFirstNodeRecovers(t *testing.T, client *redlock.Client, after uint64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(bg, 5*time.Second)
		lock, err := client.Acquire(ctx, "job")
		cancel()
		if err != nil {
			t.Fatalf("after the failover: %v", err)
		}
		lock.Release(bg)
		if lock.Fence() <= after {
			t.Errorf("fencing token %d after %d", lock.Fence(), after)
		}
		r := lock.Nodes()[0]
		if r.Outcome == redlock.OutcomeRecovering {
			return
		}
		if r.Outcome == redlock.OutcomeOK || time.Now().After(deadline) {
			t.Fatalf("the promoted replica answered %v, want recovering", r)
		}
	}
}

// holders counts the nodes whose state shows token holding the key.
func holders(states []redlock.NodeState, token string) int {
	n := 0
	for _, s := range states {
		if s.Holder == token {
			n++
		}
	}
	return n
}

// One Sentinel-managed master listed twice, under two names of its
// Sentinel or once through the Sentinel and once by its own URL, fails
// Dial with ErrDuplicateNode naming both entries. Either adapter.
func TestSentinel_masterListedTwice(t *testing.T) {
	servers := redlocktest.Start(t, redlocktest.Options{Nodes: 2})
	sentinel := redlocktest.StartSentinel(t, redlocktest.SentinelOptions{Masters: map[string]int{"locks": servers.Node(0).Port()}})
	viaIP := sentinel.URL("locks")
	viaName := fmt.Sprintf("redis://localhost:%d?master_name=locks", sentinel.Port())
	other := servers.Node(1).URL()
	forEachDialer(t, func(t *testing.T, d dialer) {
		for second, name := range map[string]string{viaName: "locks@sentinel:localhost:", servers.Node(0).URL(): servers.Node(0).Addr() + " "} {
			client, err := d.dial(bg, []string{viaIP, second, other}, nil)
			if err == nil {
				client.Close()
				t.Fatalf("Dial of %s twice succeeded", viaIP)
			}
			if !errors.Is(err, redlock.ErrDuplicateNode) || !strings.Contains(err.Error(), "locks@sentinel:127.0.0.1:") || !strings.Contains(err.Error(), name) {
				t.Errorf("Dial of %s and %s = %v, want ErrDuplicateNode naming both entries", viaIP, second, err)
			}
		}
	})
}

// WaitReplicas works through a Sentinel node: the grant is on the replica
// when Acquire returns, and after the master dies the promoted replica,
// found through the Sentinel, holds the lock and refuses another client.
// With the replica cut off, a grant through the Sentinel does not count.
// Either adapter.
func TestSentinel_waitReplicas(t *testing.T) {
	t.Parallel()
	forEachDialer(t, func(t *testing.T, d dialer) {
		master, replica := masterWithReplica(t)
		sentinel := redlocktest.StartSentinel(t, redlocktest.SentinelOptions{Masters: map[string]int{"locks": master.Node(0).Port()}})
		url := []string{sentinel.URL("locks")}
		opts := &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 500 * time.Millisecond, WaitReplicas: 1}
		holder, err := d.dial(bg, url, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		if err := holder.MarkReady(bg, false); err != nil {
			t.Fatal(err)
		}
		// Acquire, not TryAcquire: a first attempt that a loaded machine
		// makes miss the node timeout is tried again.
		ctx, cancel := context.WithTimeout(bg, 10*time.Second)
		lock, err := holder.Acquire(ctx, "replicated")
		cancel()
		if err != nil {
			t.Fatalf("acquire with WaitReplicas through Sentinel: %v", err)
		}
		if got := keyOn(t, replica.Node(0), "replicated"); got != lock.Token() {
			t.Fatalf("the replica holds %q when Acquire returned, want the lock's token", got)
		}

		if err := master.Node(0).Kill(); err != nil {
			t.Fatal(err)
		}
		waitPromoted(t, sentinel, "locks", replica.Node(0))
		// Without the quarantine, which would keep the promoted replica
		// out whatever it holds.
		other, err := d.dial(bg, url, &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 500 * time.Millisecond, DisableQuarantine: true, WaitReplicas: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		// The client may need a moment to hear of the new master.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			_, err = other.TryAcquire(bg, "replicated")
			r := quorumError(t, err).Nodes[0]
			if r.Outcome == redlock.OutcomeHeld {
				break
			}
			if r.Outcome == redlock.OutcomeOK || time.Now().After(deadline) {
				t.Fatalf("the promoted replica answered %v, want held: it has the lock", r)
			}
		}

		// The promoted replica has no replica of its own: WAIT confirms
		// nothing, and a grant does not count.
		_, err = other.TryAcquire(bg, "unconfirmed")
		if qe := quorumError(t, err); qe.Nodes[0].Outcome != redlock.OutcomeError || !strings.Contains(qe.Nodes[0].Err.Error(), "WaitReplicas") {
			t.Errorf("a grant no replica confirmed: %v, want an error naming WaitReplicas", qe.Nodes[0])
		}
	})
}

// rueidis.New of a rueidis Sentinel client names the node after the
// client, not after the master it reaches now: two such clients, of two
// masters, are two nodes, and a name does not move with a failover.
// Before, each was named after its master's address at New.
func TestSentinel_rueidisClientsAreNodesOfTheirOwn(t *testing.T) {
	masters := redlocktest.Start(t, redlocktest.Options{Nodes: 2})
	sentinel, _ := monitorEach(t, masters)
	clients := make([]rueidisclient.Client, 2)
	for i := range clients {
		c, err := rueidisclient.NewClient(rueidisclient.ClientOption{InitAddress: []string{sentinel.Addr()},
			Sentinel: rueidisclient.SentinelOption{MasterSet: "locks" + strconv.Itoa(i)}, DisableCache: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients[i] = c
	}
	a, b := rueidis.New(clients[0]), rueidis.New(clients[1])
	if a.Name() == b.Name() || !strings.HasPrefix(a.Name(), "sentinel@") || strings.Contains(a.Name(), masters.Node(0).Addr()) {
		t.Errorf("names %q and %q, want two sentinel@… names", a.Name(), b.Name())
	}
	if _, err := redlock.New([]redlock.Conn{a, rueidis.New(clients[0])}, nil); !errors.Is(err, redlock.ErrDuplicateNode) {
		t.Errorf("one Sentinel client twice: %v, want ErrDuplicateNode", err)
	}
	if got := rueidis.NewNamed(clients[0], "locks0@sentinel").Name(); got != "locks0@sentinel" {
		t.Errorf("NewNamed: %q", got)
	}
	client, err := redlock.New([]redlock.Conn{a, b}, fast())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	lock, err := client.TryAcquire(bg, "sentinel-names")
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Release(bg); err != nil {
		t.Fatal(err)
	}
}
