package redlock_test

import (
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// One server given to New under two names (localhost and 127.0.0.1) votes
// once: before a node's first request the Client reads its server's
// run_id, and leaves out for good an entry whose server an earlier entry
// reaches, with an error wrapping ErrDuplicateNode that the Logger is
// told. Before, with the third node paused, that one server granted the
// lock by itself, as two votes of three.
func TestNew_oneServerUnderTwoNamesVotesOnce(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 2})
	port := strconv.Itoa(cluster.Node(0).Port())
	addrs := []string{"localhost:" + port, "127.0.0.1:" + port, cluster.Node(1).Addr()}
	forEachAdapter(t, func(t *testing.T, a adapter) {
		log := &records{}
		opts := &redlock.Options{TTL: 5 * time.Second, NodeTimeout: time.Second, Logger: slog.New(log)}
		client, err := redlock.New(a.conns(t, addrs), opts)
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()

		// Left out for good, and the Logger told once: the requests
		// queued behind the read that found it out are not read again.
		// Eight calls at once make the first requests of every node.
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				if l, err := client.TryAcquire(bg, "sameserver-first:"+a.name+strconv.Itoa(i)); err == nil {
					l.Release(bg)
				}
			})
		}
		wg.Wait()

		key := "sameserver:" + a.name
		lock, err := client.TryAcquire(bg, key)
		if err != nil {
			t.Fatalf("TryAcquire with two servers of three entries up: %v", err)
		}
		if err := lock.Release(bg); err != nil {
			t.Fatal(err)
		}
		// The lock was granted at a quorum: the entry left out may answer
		// after it.
		eventually(t, "the Logger is told of the entry left out, naming both", func() bool {
			text := log.text()
			return strings.Contains(text, "another entry of the node list reaches its server") &&
				strings.Contains(text, "localhost:"+port) && strings.Contains(text, "127.0.0.1:"+port)
		})

		if err := cluster.Node(1).Pause(); err != nil {
			t.Fatal(err)
		}
		defer cluster.Node(1).Resume()
		lock, err = client.TryAcquire(bg, key)
		if err == nil {
			lock.Release(bg)
			t.Fatalf("TryAcquire granted by one server listed twice, the third node paused: %+v", lock.Nodes())
		}
		if !duplicateIn(err) {
			t.Errorf("TryAcquire = %v, want a node's error wrapping ErrDuplicateNode", err)
		}
		if err := cluster.Node(1).Resume(); err != nil {
			t.Fatal(err)
		}
		client.Close() // waits for the requests still under way
		if n := strings.Count(log.text(), "node left out"); n != 1 {
			t.Errorf("the Logger was told %d times of the entry left out, want once:\n%s", n, log.text())
		}
	})
}

// MarkReady over a node list with one server under two names marks that
// server through the entry that counts: the entry left out is no node of
// its own. Before, MarkReady failed for it, its error not wrapping
// ErrDuplicateNode, and brand-new nodes could not be marked ready.
func TestMarkReady_oneServerUnderTwoNames(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		for _, force := range []bool{false, true} {
			cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 2})
			port := strconv.Itoa(cluster.Node(0).Port())
			addrs := []string{"localhost:" + port, "127.0.0.1:" + port, cluster.Node(1).Addr()}
			client, err := redlock.New(a.conns(t, addrs), &redlock.Options{TTL: 5 * time.Second, NodeTimeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			if err := client.MarkReady(bg, force); err != nil {
				t.Fatalf("MarkReady(force %v): %v", force, err)
			}
			for _, n := range cluster.Nodes() {
				if m := keyOn(t, n, redlock.MarkerKey); m != "0" {
					t.Errorf("force %v: node %d's restart marker %q, want 0 (ready)", force, n.Index(), m)
				}
			}
			lock, err := client.TryAcquire(bg, "marked")
			if err != nil {
				t.Fatalf("force %v: TryAcquire after MarkReady: %v", force, err)
			}
			lock.Release(bg)
		}
	})
}

// A node whose server cannot be identified, as its user is refused INFO,
// votes, and the Logger is warned once that it would vote twice if listed
// again under another name. Before, nothing said that New could not check
// it.
func TestNew_unidentifiedServerIsWarnedOf(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 2})
	do(t, cluster.Node(0), "ACL", "SETUSER", "default", "-info")
	forEachAdapter(t, func(t *testing.T, a adapter) {
		log := &records{}
		client, err := redlock.New(a.conns(t, cluster.Addrs()), &redlock.Options{TTL: 5 * time.Second, NodeTimeout: time.Second,
			DisableQuarantine: true, Logger: slog.New(log)})
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		for i := range 3 {
			lock, err := client.TryAcquire(bg, "unidentified:"+a.name+strconv.Itoa(i))
			if err != nil {
				t.Fatalf("TryAcquire: %v", err)
			}
			lock.Release(bg)
		}
		client.Close()
		text := log.text()
		if n := strings.Count(text, "not identified"); n != 1 || !strings.Contains(text, cluster.Node(0).Addr()) {
			t.Errorf("the Logger was warned %d times of the node not identified, want once, naming %s:\n%s", n, cluster.Node(0).Addr(), text)
		}
		if strings.Contains(text, cluster.Node(1).Addr()) {
			t.Errorf("the Logger named the node identified:\n%s", text)
		}
	})
}

// Where the entry left out as a duplicate leaves too few nodes for a
// quorum, the call fails at once with an error that wraps both
// ErrInvalidOptions and ErrDuplicateNode. Before, only the node's own
// entry in the QuorumError wrapped ErrDuplicateNode.
func TestNew_duplicateLeavingNoQuorumIsSaidByErrorsIs(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	port := strconv.Itoa(cluster.Node(0).Port())
	forEachAdapter(t, func(t *testing.T, a adapter) {
		client, err := redlock.New(a.conns(t, []string{"localhost:" + port, "127.0.0.1:" + port}), &redlock.Options{NodeTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		var lastErr error
		eventually(t, "a call fails for the duplicate", func() bool {
			lock, err := client.TryAcquire(bg, "dup-quorum:"+a.name)
			if err == nil {
				lock.Release(bg)
				t.Fatal("one server listed twice granted a lock of two nodes")
			}
			lastErr = err
			return duplicateIn(err)
		})
		if !errors.Is(lastErr, redlock.ErrDuplicateNode) || !errors.Is(lastErr, redlock.ErrInvalidOptions) {
			t.Errorf("TryAcquire = %v, want it to wrap ErrDuplicateNode and ErrInvalidOptions", lastErr)
		}
	})
}

// Dial of nodes whose user is refused INFO, the quarantine off, cannot
// tell whether two entries reach one server: the Logger is warned once
// per node. Before, nothing was said, where New warned.
func TestDial_unidentifiedServersAreWarnedOf(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 2})
	urls := userURLs(t, cluster, "noinfo", "-info")
	forEachDialer(t, func(t *testing.T, d dialer) {
		log := &records{}
		c, err := d.dial(bg, urls, &redlock.Options{DisableQuarantine: true, NodeTimeout: time.Second, Logger: slog.New(log)})
		if err != nil {
			t.Fatal(err)
		}
		lock, err := c.TryAcquire(bg, "unidentified-dial")
		if err != nil {
			t.Fatal(err)
		}
		lock.Release(bg)
		c.Close()
		text := log.text()
		for _, n := range cluster.Nodes() {
			if k := strings.Count(text, "not identified"); k != 2 || !strings.Contains(text, n.Addr()) {
				t.Errorf("%d warnings, want one naming each node (%s):\n%s", k, n.Addr(), text)
			}
		}
	})
}
