package redlock_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
)

// A node given as a Sentinel-managed master locks through whichever
// process is the master, and follows a failover: the promoted replica is
// another process, so it does not grant the lock its old master held
// (the restart quarantine keeps it out). Both adapters take the URL.
func TestSentinel_nodeFollowsFailover(t *testing.T) {
	t.Parallel()
	forEachDialer(t, func(t *testing.T, d dialer) {
		master := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
		replica := redlocktest.Start(t, redlocktest.Options{Nodes: 1,
			Config: []string{"replicaof 127.0.0.1 " + strconv.Itoa(master.Node(0).Port())}})
		waitSynced(t, replica.Node(0))
		sentinel := redlocktest.StartSentinel(t, redlocktest.SentinelOptions{Masters: map[string]int{"locks": master.Node(0).Port()}})
		url := sentinel.URL("locks")
		opts := &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 300 * time.Millisecond, RecoveryDelay: 5 * time.Second}
		holder, err := d.dial(bg, []string{url}, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		if err := holder.MarkReady(bg, false); err != nil {
			t.Fatal(err)
		}
		if states, err := holder.Inspect(bg, "job"); err != nil || !strings.HasPrefix(states[0].Node, "locks@sentinel:") {
			t.Errorf("Inspect: %+v, %v; want the node named after the master and the Sentinels", states, err)
		}
		lock, err := holder.TryAcquire(bg, "job")
		if err != nil {
			t.Fatalf("acquire through Sentinel: %v", err)
		}
		if v, _ := master.Node(0).Do(bg, "GET", "job"); v != lock.Token() {
			t.Fatalf("the master holds %q, want the lock's token", v)
		}

		if err := master.Node(0).Kill(); err != nil {
			t.Fatal(err)
		}
		waitPromoted(t, sentinel, "locks", replica.Node(0))
		other, err := d.dial(bg, []string{url}, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		_, err = other.TryAcquire(bg, "job")
		qe := quorumError(t, err)
		t.Logf("after the failover: %v", qe.Nodes[0])
		if o := qe.Nodes[0].Outcome; o != redlock.OutcomeRecovering && o != redlock.OutcomeHeld {
			t.Fatalf("the promoted replica answered %v, want recovering (or held)", qe.Nodes[0])
		}
	})
}

// A Sentinel URL carries the Sentinels' password in its userinfo and the
// master's in its password parameter, with either adapter; a wrong master
// password fails Dial, naming the node and without the passwords.
func TestSentinel_passwords(t *testing.T) {
	master := redlocktest.Start(t, redlocktest.Options{Nodes: 1, Password: "master-pw"})
	sentinel := redlocktest.StartSentinel(t, redlocktest.SentinelOptions{
		Masters:  map[string]int{"locks": master.Node(0).Port()},
		Password: "sentinel-pw",
		Config:   []string{"sentinel auth-pass locks master-pw"},
	})
	url := sentinel.URL("locks") + "&password="
	forEachDialer(t, func(t *testing.T, d dialer) {
		client, err := d.dial(bg, []string{url + "master-pw"}, fast())
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		if err := client.MarkReady(bg, false); err != nil {
			t.Fatal(err)
		}
		lock, err := client.TryAcquire(bg, "job")
		if err != nil {
			t.Fatalf("acquire through a Sentinel with passwords: %v", err)
		}
		lock.Release(bg)

		_, err = d.dial(bg, []string{url + "not-it-pw"}, nil)
		if err == nil || !strings.Contains(err.Error(), "locks@sentinel:") || !strings.Contains(err.Error(), "WRONGPASS") {
			t.Errorf("Dial with a wrong master password: %v, want the node's WRONGPASS", err)
		}
		if err != nil && strings.Contains(err.Error(), "-pw") {
			t.Errorf("error shows a password: %v", err)
		}
	})
}

// A Sentinel URL whose master_name the Sentinels do not know is a
// configuration error at Dial, with either adapter: no retry fixes it.
func TestSentinel_unknownMasterName(t *testing.T) {
	master := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	sentinel := redlocktest.StartSentinel(t, redlocktest.SentinelOptions{Masters: map[string]int{"locks": master.Node(0).Port()}})
	forEachDialer(t, func(t *testing.T, d dialer) {
		client, err := d.dial(bg, []string{sentinel.URL("nope")}, fast())
		if err == nil {
			client.Close()
		}
		if !errors.Is(err, goredis.ErrInvalidURL) || !strings.Contains(strings.ToLower(err.Error()), "no such master") {
			t.Errorf("Dial with an unknown master_name: %v, want ErrInvalidURL saying there is no such master", err)
		}
	})
}

// waitSynced waits until n is a replica whose link to its master is up.
func waitSynced(t *testing.T, n *redlocktest.Node) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if info, err := n.Do(bg, "INFO", "replication"); err == nil && strings.Contains(info, "master_link_status:up") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the replica never synced")
		}
	}
}

// waitPromoted waits until sentinel gives replica as the master called
// name.
func waitPromoted(t *testing.T, sentinel *redlocktest.Sentinel, name string, replica *redlocktest.Node) {
	t.Helper()
	if err := sentinel.WaitMaster(bg, name, replica.Addr()); err != nil {
		t.Fatal(err)
	}
}
