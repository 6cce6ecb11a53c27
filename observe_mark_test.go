package redlock_test

import (
	"context"
	"testing"
	"time"

	goredisv9 "github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// An election's observer listens for the lock's releases without trying
// for the lock, so it sets the key's waiting mark on the nodes while it
// observes: a release is announced only where the mark is, and a leader's
// resignation with nobody queued is announced to the observer. Without an
// observer nothing marks the key and the resignation is announced to
// nobody.
func TestObserve_marksTheKeySoThatReleasesAreAnnounced(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	node := cluster.Node(0)
	leader := election(t, newClient(t, cluster, adapters[0], fast()), "svc")
	watcher := election(t, newClient(t, cluster, adapters[0], fast()), "svc")
	sub := goredisv9.NewClient(&goredisv9.Options{Addr: node.Addr()}).Subscribe(bg, redlock.ReleaseChannel("svc", false))
	defer sub.Close()
	if _, err := sub.Receive(bg); err != nil {
		t.Fatal(err)
	}
	resign := func() {
		t.Helper()
		if err := leader.Campaign(bg, "a"); err != nil {
			t.Fatal(err)
		}
		if err := leader.Resign(bg); err != nil {
			t.Fatal(err)
		}
	}
	heard := func(within time.Duration) bool {
		select {
		case <-sub.Channel():
			return true
		case <-time.After(within):
			return false
		}
	}

	resign()
	if keyOn(t, node, redlock.WaitingKey("svc")) != "" || heard(300*time.Millisecond) {
		t.Fatal("a resignation nobody waits for was announced")
	}

	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	changes := watcher.Observe(ctx)
	go func() {
		for range changes {
		}
	}()
	eventually(t, "the observer's waiting mark", func() bool { return keyOn(t, node, redlock.WaitingKey("svc")) != "" })
	resign()
	if !heard(5 * time.Second) {
		t.Fatal("a resignation with an observer listening was not announced")
	}
}
