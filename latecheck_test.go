package redlock_test

import (
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// One server listed under two addresses of its own (127.0.0.1 and
// 127.0.0.2), which Dial cannot tell apart by address and which does not
// answer at Dial, counts once when it answers: Dial's check of duplicates
// is made then, and one of the two entries stays out, its calls failing
// with ErrDuplicateNode, and the Logger told. Before, it counted twice:
// with the third node down, that one server granted locks.
func TestDial_serverUnansweredAtDialUnderTwoAddressesVotesOnce(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1, Config: []string{"bind 127.0.0.1 127.0.0.2"}})
	port := strconv.Itoa(cluster.Node(0).Port())
	urls := []string{"redis://127.0.0.1:" + port, "redis://127.0.0.2:" + port, "redis://127.0.0.1:1"}
	forEachDialer(t, func(t *testing.T, d dialer) {
		if err := cluster.Node(0).Pause(); err != nil {
			t.Fatal(err)
		}
		log := &records{}
		opts := fast()
		opts.Logger = slog.New(log)
		client, err := d.dial(bg, urls, opts)
		resumeErr := cluster.Node(0).Resume()
		if err != nil {
			t.Fatalf("Dial with every node silent or down: %v", err)
		}
		defer client.Close()
		if resumeErr != nil {
			t.Fatal(resumeErr)
		}
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			lock, err := client.TryAcquire(bg, "twice")
			if err == nil {
				lock.Release(bg)
				t.Fatalf("one server of two names granted a lock of three nodes: %v", lock.Nodes())
			}
			if duplicateIn(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("20 s after the server answers, no node says it is a duplicate: %v", err)
			}
		}
		if !strings.Contains(log.text(), "another entry of the node list reaches its server") {
			t.Errorf("the Logger was not told of the duplicate: %s", log.text())
		}
	})
}

// duplicateIn reports whether a node of err's QuorumError failed with
// ErrDuplicateNode.
func duplicateIn(err error) bool {
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) {
		return false
	}
	for _, n := range qe.Nodes {
		if errors.Is(n.Err, redlock.ErrDuplicateNode) {
			return true
		}
	}
	return false
}

// A node that Dial could not reach, and that is a server of its own,
// votes once it answers: with another node down then, only its vote makes
// a majority, and locks are granted again.
func TestDial_nodeUnansweredAtDialVotesOnceItAnswers(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	forEachDialer(t, func(t *testing.T, d dialer) {
		late, other := cluster.Node(2), cluster.Node(1)
		if err := late.Pause(); err != nil {
			t.Fatal(err)
		}
		client, err := d.dial(bg, cluster.URLs(), fast())
		resumeErr := late.Resume()
		if err != nil {
			t.Fatalf("Dial with one node silent: %v", err)
		}
		defer client.Close()
		if resumeErr != nil {
			t.Fatal(resumeErr)
		}
		if err := other.Pause(); err != nil {
			t.Fatal(err)
		}
		defer other.Resume()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			lock, err := client.TryAcquire(bg, "late")
			if err == nil {
				lock.Release(bg)
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("20 s after the node silent at Dial answers, its vote still does not count: %v", err)
			}
		}
	})
}
