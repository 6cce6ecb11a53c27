package redlock_test

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

func TestExtendToken_extendsAnotherProcessLock(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], fast())
	// A second client, as another process would, knows only key and token.
	other := newClient(t, cluster, adapters[1], fast())
	lock, err := holder.TryAcquire(bg, "handed-over", redlock.WithTTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// TryAcquire returned at a quorum, and another client's extension is
	// not ordered after the holder's requests still on their way: every
	// node holds the lock before it is extended.
	waitForKey(t, cluster, "handed-over", lock.Token())
	start := time.Now()
	until, err := other.ExtendToken(bg, "handed-over", lock.Token(), 5*time.Second)
	if err != nil {
		t.Fatalf("ExtendToken: %v", err)
	}
	if until.Before(start.Add(4*time.Second)) || until.After(time.Now().Add(5*time.Second)) {
		t.Errorf("deadline %s after extending by 5 s at %s", until, start)
	}
	// The last node answers after the quorum; unextended, the lock has at
	// most two seconds left.
	for _, n := range cluster.Nodes() {
		eventually(t, fmt.Sprintf("node %d: PTTL in [4000, 5000] ms after extending to 5 s", n.Index()), func() bool {
			ms, _ := strconv.Atoi(do(t, n, "PTTL", "handed-over"))
			return ms >= 4000 && ms <= 5000
		})
	}
	if err := other.ReleaseToken(bg, "handed-over", lock.Token()); err != nil {
		t.Fatalf("ReleaseToken: %v", err)
	}
	for _, n := range cluster.Nodes() { // the last node follows the quorum
		if v := eventuallyGone(t, n, "handed-over"); v != "" {
			t.Errorf("node %d still holds %q after ReleaseToken", n.Index(), v)
		}
	}
}

func TestExtendToken_wrongOrExpiredToken(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	lock, err := client.TryAcquire(bg, "k", redlock.WithTTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("wrong token", func(t *testing.T) { extendAndReleaseWrongToken(t, cluster, client, lock) })
	t.Run("expired", func(t *testing.T) { extendAndReleaseExpired(t, client) })
	t.Run("majority down", func(t *testing.T) { extendAndReleaseMajorityDown(t, cluster, client, lock) })
	t.Run("bad input", func(t *testing.T) { extendAndReleaseBadInput(t, client) })
}

// extendAndReleaseWrongToken extends and releases lock's key with a token
// that is not lock's: both are refused, and the lock is untouched.
func extendAndReleaseWrongToken(t *testing.T, cluster *redlocktest.Cluster, client *redlock.Client, lock *redlock.Lock) {
	_, err := client.ExtendToken(bg, "k", "not-the-token", time.Second)
	if !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("ExtendToken with a wrong token: %v, want ErrLockLost", err)
	}
	if n := countOutcomes(quorumError(t, err))[redlock.OutcomeHeld]; n < 2 {
		t.Errorf("%d nodes reported the key not held, want at least 2", n)
	}
	waitForKey(t, cluster, "k", lock.Token())
	err = client.ReleaseToken(bg, "k", "not-the-token")
	if !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("ReleaseToken with a wrong token: %v, want ErrNotHeld", err)
	}
	for _, n := range cluster.Nodes() {
		if v := keyOn(t, n, "k"); v != lock.Token() {
			t.Errorf("node %d holds %q, want the holder's token: a wrong token touched the lock", n.Index(), v)
		}
	}
}

// extendAndReleaseExpired extends and releases a lock after it expired:
// both are refused.
func extendAndReleaseExpired(t *testing.T, client *redlock.Client) {
	short, err := client.TryAcquire(bg, "short", redlock.WithTTL(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	if _, err := client.ExtendToken(bg, "short", short.Token(), time.Second); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("ExtendToken after expiry: %v, want ErrLockLost", err)
	}
	if err := client.ReleaseToken(bg, "short", short.Token()); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("ReleaseToken after expiry: %v, want ErrNotHeld", err)
	}
}

// extendAndReleaseMajorityDown kills 2 of the 3 nodes, then extends and
// releases lock: the extension fails without saying the lock is lost.
func extendAndReleaseMajorityDown(t *testing.T, cluster *redlocktest.Cluster, client *redlock.Client, lock *redlock.Lock) {
	for _, i := range []int{0, 1} {
		if err := cluster.Node(i).Kill(); err != nil {
			t.Fatal(err)
		}
	}
	_, err := client.ExtendToken(bg, "k", lock.Token(), time.Second)
	if !errors.Is(err, redlock.ErrNotExtended) || errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("ExtendToken with 2 of 3 nodes down: %v, want ErrNotExtended only", err)
	}
	// As Lock.Release: it returns once a quorum answered, so whether the
	// live node's deletion counts depends on the order of the answers.
	err = client.ReleaseToken(bg, "k", lock.Token())
	if err != nil && !errors.Is(err, redlock.ErrNotReleased) {
		t.Fatalf("ReleaseToken with 2 of 3 nodes down: %v, want nil or ErrNotReleased", err)
	}
}

// extendAndReleaseBadInput extends and releases with an empty key or a TTL
// too short: each is refused.
func extendAndReleaseBadInput(t *testing.T, client *redlock.Client) {
	if _, err := client.ExtendToken(bg, "", "t", time.Second); !errors.Is(err, redlock.ErrInvalidKey) {
		t.Errorf("empty key: %v", err)
	}
	if _, err := client.ExtendToken(bg, "k", "t", time.Microsecond); !errors.Is(err, redlock.ErrInvalidTTL) {
		t.Errorf("1 µs TTL: %v", err)
	}
	if err := client.ReleaseToken(bg, "", "t"); !errors.Is(err, redlock.ErrInvalidKey) {
		t.Errorf("empty key: %v", err)
	}
}

func TestExtendToken_zeroTTLKeepsTheAcquiredTTL(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], fast())
	lock, err := holder.TryAcquire(bg, "kept-ttl", redlock.WithTTL(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// Another process knows only key and token; its own default TTL is
	// shorter than the lock's.
	other := newClient(t, cluster, adapters[1], &redlock.Options{TTL: 2 * time.Second})
	until, err := other.ExtendToken(bg, "kept-ttl", lock.Token(), 0)
	if err != nil {
		t.Fatalf("ExtendToken: %v", err)
	}
	if left := time.Until(until); left < 19*time.Second {
		t.Errorf("validity %s after extending a 20 s lock by its own TTL", left)
	}
}

// An expired lock's extension is told as lost also when a node down
// leaves the refusals one short of a majority at first: the extension
// waits for the nodes still to answer once their answers can make the
// loss certain. Before, with one node of three held out since Dial,
// its error and the first refusal ended the call as ErrNotExtended ("too
// few nodes answered"), the other refusal not waited for.
func TestExtendToken_expiredWithANodeDownIsLost(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	down := cluster.Node(2)
	if err := down.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { down.Resume() })
	forEachDialer(t, func(t *testing.T, d dialer) {
		client, err := d.dial(bg, cluster.URLs(), fast())
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		key := "expired-" + d.name
		lock := take(t, client, key, redlock.WithTTL(100*time.Millisecond))
		for _, n := range cluster.Nodes()[:2] {
			waitGone(t, n, key, "the lock did not expire")
		}
		for range 5 {
			_, err := client.ExtendToken(bg, key, lock.Token(), time.Second)
			if !errors.Is(err, redlock.ErrLockLost) || countOutcomes(quorumError(t, err))[redlock.OutcomeHeld] != 2 {
				t.Fatalf("ExtendToken of an expired lock, one node of three paused: %v, want ErrLockLost from the two others", err)
			}
		}
	})
}
