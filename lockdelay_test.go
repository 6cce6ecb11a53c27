package redlock_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// A lock-delay out of range fails every acquisition call with
// ErrInvalidLockDelay, before any node is asked.
func TestWithLockDelay_badInput(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	c := newClient(t, cluster, adapters[0], &redlock.Options{TTL: 2 * time.Second, RecoveryDelay: 10 * time.Second})
	for _, tc := range []struct {
		name string
		opts []redlock.LockOption
	}{
		{"negative", []redlock.LockOption{redlock.WithLockDelay(-time.Millisecond)}},
		{"above the maximum", []redlock.LockOption{redlock.WithLockDelay(redlock.MaxLockDelay + time.Millisecond)}},
		{"TTL plus delay above the recovery delay", []redlock.LockOption{redlock.WithLockDelay(8*time.Second + time.Millisecond)}},
		{"with a longer TTL", []redlock.LockOption{redlock.WithTTL(5 * time.Second), redlock.WithLockDelay(6 * time.Second)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.TryAcquire(bg, "k", tc.opts...); !errors.Is(err, redlock.ErrInvalidLockDelay) {
				t.Errorf("TryAcquire: %v, want ErrInvalidLockDelay", err)
			}
			if _, err := c.Acquire(bg, "k", tc.opts...); !errors.Is(err, redlock.ErrInvalidLockDelay) {
				t.Errorf("Acquire: %v, want ErrInvalidLockDelay", err)
			}
			if _, err := c.AcquireAll(bg, []string{"k", "l"}, tc.opts...); !errors.Is(err, redlock.ErrInvalidLockDelay) {
				t.Errorf("AcquireAll: %v, want ErrInvalidLockDelay", err)
			}
			err := c.Do(bg, "k", func(context.Context) error { return nil }, tc.opts...)
			if !errors.Is(err, redlock.ErrInvalidLockDelay) {
				t.Errorf("Do: %v, want ErrInvalidLockDelay", err)
			}
		})
	}
	lock, err := c.Acquire(bg, "ok", redlock.WithLockDelay(8*time.Second))
	if err != nil {
		t.Fatalf("TTL plus delay at the recovery delay: %v", err)
	}
	if err := lock.Extend(bg, 3*time.Second); !errors.Is(err, redlock.ErrInvalidLockDelay) {
		t.Errorf("Extend past the recovery delay: %v, want ErrInvalidLockDelay", err)
	}
	lock.Release(bg)

	// Without the quarantine, a TTL whose sum with the delay is beyond a
	// time.Duration: before, the sum wrapped negative, and Extend reported
	// success while the nodes deleted the key.
	off := newClient(t, cluster, adapters[0], &redlock.Options{TTL: 2 * time.Second, DisableQuarantine: true})
	lock, err = off.TryAcquire(bg, "wrap", redlock.WithLockDelay(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	huge := time.Duration(math.MaxInt64) - 30*time.Second
	if err := lock.Extend(bg, huge); !errors.Is(err, redlock.ErrInvalidLockDelay) || !errors.Is(err, redlock.ErrInvalidTTL) {
		t.Errorf("Extend by a TTL that wraps with the delay: %v, want ErrInvalidLockDelay and ErrInvalidTTL", err)
	}
	if _, err := off.TryAcquire(bg, "wrap"); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Errorf("TryAcquire of the lock after the refused Extend: %v, want ErrNotAcquired: it is still held", err)
	}
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	if _, err := off.Acquire(ctx, "wrap-2", redlock.WithTTL(huge), redlock.WithLockDelay(time.Minute)); !errors.Is(err, redlock.ErrInvalidTTL) || ctx.Err() != nil {
		t.Errorf("Acquire by a TTL that wraps with the delay: %v, want ErrInvalidTTL at once", err)
	}
	lock.Release(bg)
}

// A lock whose holder stops without releasing it stays out of everyone's
// reach for its TTL plus the delay, counted from before the acquisition.
func TestWithLockDelay_holderThatStopsKeepsOthersOut(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		holder := newClient(t, cluster, a, fast())
		next := newClient(t, cluster, a, fast())
		const ttl, delay = 300 * time.Millisecond, 1500 * time.Millisecond
		start := time.Now()
		lock, err := holder.Acquire(bg, "job", redlock.WithTTL(ttl), redlock.WithLockDelay(delay))
		if err != nil {
			t.Fatal(err)
		}
		if left := time.Until(lock.Until()); left > ttl {
			t.Errorf("validity %s left, above the %s TTL: the delay must not lengthen it", left, ttl)
		}
		ctx, cancel := context.WithTimeout(bg, 30*time.Second)
		defer cancel()
		if _, err := next.Acquire(ctx, "job"); err != nil {
			t.Fatal(err)
		}
		// Redis expires a key within its millisecond resolution.
		if took, least := time.Since(start), ttl+delay-2*time.Millisecond; took < least {
			t.Errorf("the next holder got the lock %s after the first began acquiring, before %s", took, least)
		}
		if !errors.Is(lock.Err(), redlock.ErrLockExpired) {
			t.Errorf("first holder's Err %v, want ErrLockExpired", lock.Err())
		}
	})
}

// A release frees a lock with a lock-delay at once.
func TestWithLockDelay_releaseFreesAtOnce(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		holder := newClient(t, cluster, a, fast())
		next := newClient(t, cluster, a, fast())
		lock, err := holder.Acquire(bg, "job", redlock.WithLockDelay(20*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := lock.Release(bg); err != nil {
			t.Fatal(err)
		}
		again, err := next.TryAcquire(bg, "job")
		if err != nil {
			t.Fatalf("after a release: %v", err)
		}
		again.Release(bg)
	})
}

// A release that comes after the lock ended (its holder worked past its
// validity, or was told it lost the lock) leaves the delay standing, as for
// a holder that died: Release says so with ErrNotHeld, the key stays, and
// an election's Resign after its lead ended does nothing.
func TestWithLockDelay_releaseAfterTheEndKeepsTheDelay(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], fast())
	next := newClient(t, cluster, adapters[0], fast())
	const ttl, delay = 300 * time.Millisecond, 10 * time.Second
	lock, err := holder.Acquire(bg, "job", redlock.WithTTL(ttl), redlock.WithLockDelay(delay))
	if err != nil {
		t.Fatal(err)
	}
	// Acquire returned at a quorum: a node may never have seen the lock.
	held := holdingNodes(t, cluster, "job", lock.Token())
	<-lock.Done()
	err = lock.Release(bg)
	if !errors.Is(err, redlock.ErrNotHeld) || !errors.Is(err, redlock.ErrLockExpired) {
		t.Errorf("Release after the lock expired: %v, want ErrNotHeld wrapping ErrLockExpired", err)
	}
	if err := lock.Release(bg); !errors.Is(err, redlock.ErrReleased) {
		t.Errorf("a second Release: %v, want ErrReleased", err)
	}
	for _, n := range held {
		if keyOn(t, n, "job") != lock.Token() {
			t.Errorf("%s: the key is gone, want it kept by the delay", n.URL())
		}
	}
	if _, err := next.TryAcquire(bg, "job"); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Errorf("another client during the delay: %v, want ErrNotAcquired", err)
	}
	// By token too, from another client, once its TTL ran out on the nodes
	// (Done came a loss margin before): the delay stands, and the lock does
	// not come back.
	onlyTheDelayLeft(t, cluster, "job", delay)
	if _, err := next.ExtendToken(bg, "job", lock.Token(), ttl); !errors.Is(err, redlock.ErrLockLost) {
		t.Errorf("ExtendToken after the lock's TTL ran out: %v, want ErrLockLost", err)
	}
	if err := next.ReleaseToken(bg, "job", lock.Token()); !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("ReleaseToken after the lock's TTL ran out: %v, want ErrNotHeld", err)
	}
	for _, n := range held {
		if keyOn(t, n, "job") != lock.Token() {
			t.Errorf("%s: the key is gone after ReleaseToken, want it kept by the delay", n.URL())
		}
	}

	// A lock its holder extended, then let lapse, was lost, not expired:
	// Release says so, whether or not Err was asked first.
	kept, err := holder.Acquire(bg, "kept", redlock.WithTTL(ttl), redlock.WithLockDelay(delay))
	if err != nil {
		t.Fatal(err)
	}
	if err := kept.Extend(bg, ttl); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(kept.Until()))
	if err := kept.Release(bg); !errors.Is(err, redlock.ErrNotHeld) || !errors.Is(err, redlock.ErrLockLost) {
		t.Errorf("Release after an extended lock lapsed: %v, want ErrNotHeld wrapping ErrLockLost", err)
	}

	// A lead lost the same way: Lock says nobody leads here, and Resign
	// leaves the delay standing.
	e, err := holder.NewElection("lead", redlock.WithTTL(ttl), redlock.WithLockDelay(delay))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Campaign(bg, "a"); err != nil {
		t.Fatal(err)
	}
	won := e.Lock()
	led := holdingNodes(t, cluster, won.Key(), won.Token())
	pauseAll(t, cluster)
	<-e.Done()
	if l := e.Lock(); l != nil {
		t.Errorf("Lock after the lead ended: %v, want nil", l)
	}
	resumeAll(t, cluster)
	if err := e.Resign(bg); err != nil {
		t.Errorf("Resign after the lead ended: %v, want nil", err)
	}
	for _, n := range led {
		if keyOn(t, n, won.Key()) != won.Token() {
			t.Errorf("%s: the lead's key is gone after Resign, want it kept by the delay", n.URL())
		}
	}
}

// A reader's lock-delay stands by token too: once the reader's TTL ran out
// on the nodes, ReleaseToken from another client does not take it out of
// the readers, nor ExtendToken revive it, and writers stay out.
func TestWithLockDelay_readerByTokenAfterItsEndKeepsTheDelay(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], fast())
	next := newClient(t, cluster, adapters[0], fast())
	const ttl, delay = 300 * time.Millisecond, 10 * time.Second
	reader, err := holder.Acquire(bg, "doc", redlock.WithShared(), redlock.WithTTL(ttl), redlock.WithLockDelay(delay))
	if err != nil {
		t.Fatal(err)
	}
	onlyTheDelayLeft(t, cluster, "doc", delay)
	// Acquire returned at a quorum: a node may never have seen the reader.
	var kept []*redlocktest.Node
	for _, n := range cluster.Nodes() {
		if do(t, n, "ZSCORE", "doc", reader.Token()) != "" {
			kept = append(kept, n)
		}
	}
	if len(kept) < 2 {
		t.Fatalf("the reader is on %d of 3 nodes once its TTL ran out, want a majority kept by the delay", len(kept))
	}
	if _, err := next.ExtendToken(bg, "doc", reader.Token(), ttl); !errors.Is(err, redlock.ErrLockLost) {
		t.Errorf("ExtendToken of the reader after its TTL ran out: %v, want ErrLockLost", err)
	}
	if err := next.ReleaseToken(bg, "doc", reader.Token()); !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("ReleaseToken of the reader after its TTL ran out: %v, want ErrNotHeld", err)
	}
	for _, n := range kept {
		if do(t, n, "ZSCORE", "doc", reader.Token()) == "" {
			t.Errorf("%s: the reader is gone after ReleaseToken, want it kept by the delay", n.URL())
		}
	}
	if _, err := next.TryAcquire(bg, "doc"); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Errorf("a writer during the reader's delay: %v, want ErrNotAcquired", err)
	}
}

// Every shape keeps the delay on the nodes at acquisition and through each
// extension, explicit or automatic, while its validity counts from the TTL:
// a lock, a permit, and a writer, whose delay keeps readers out too.
func TestWithLockDelay_everyShapeAndExtension(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		c := newClient(t, cluster, a, fast())
		const ttl, delay = time.Second, 20 * time.Second
		for _, shape := range []struct {
			name string
			opts []redlock.LockOption
		}{
			{"lock", nil},
			{"permit", []redlock.LockOption{redlock.WithLimit(2)}},
			{"writer", nil},
		} {
			t.Run(shape.name, func(t *testing.T) {
				name := "delayed-" + shape.name
				opts := append([]redlock.LockOption{redlock.WithTTL(ttl), redlock.WithLockDelay(delay), redlock.WithAutoRenew()}, shape.opts...)
				lock, err := c.Acquire(bg, name, opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer lock.Release(bg)
				awaitDelayedOnNodes(t, c, lock, ttl, 3)
				if err := lock.Extend(bg, 0); err != nil {
					t.Fatal(err)
				}
				if left := time.Until(lock.Until()); left > ttl {
					t.Errorf("validity %s left after Extend, above the %s TTL", left, ttl)
				}
				awaitDelayedOnNodes(t, c, lock, ttl, 3)
				// Auto-renewal extends it every third of the TTL.
				for n := lock.Extensions(); lock.Extensions() < n+2; time.Sleep(10 * time.Millisecond) {
					if lock.Err() != nil {
						t.Fatal(lock.Err())
					}
				}
				awaitDelayedOnNodes(t, c, lock, ttl, 3)
				if shape.name == "writer" {
					if _, err := c.TryAcquire(bg, name, redlock.WithShared()); !errors.Is(err, redlock.ErrNotAcquired) {
						t.Errorf("a reader beside the writer: %v, want ErrNotAcquired", err)
					}
				}
			})
		}
	})
}

// ExtendToken, in another process, keeps the lock-delay that the lock's
// token carries, with the TTL it carries too or one given, and returns a
// validity counted from the TTL alone; TokenGrant reads the delay off the
// token.
func TestWithLockDelay_extendTokenKeepsIt(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	c, other := newClient(t, cluster, adapters[0], fast()), newClient(t, cluster, adapters[0], fast())
	const ttl, delay = time.Second, 20 * time.Second
	lock, err := c.TryAcquire(bg, "delayed-by-token", redlock.WithTTL(ttl), redlock.WithLockDelay(delay))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(bg)
	if got := redlock.TokenGrant(lock.Token()).LockDelay; got != delay {
		t.Errorf("TokenGrant(token).LockDelay = %s, want %s", got, delay)
	}
	if got := redlock.TokenGrant("another library's token").LockDelay; got != 0 {
		t.Errorf("TokenGrant of a foreign token: LockDelay = %s, want 0", got)
	}
	for _, given := range []time.Duration{0, 2 * time.Second} {
		until, err := other.ExtendToken(bg, lock.Key(), lock.Token(), given)
		if err != nil {
			t.Fatalf("ExtendToken(%s): %v", given, err)
		}
		want := max(given, ttl)
		if left := time.Until(until); left > want {
			t.Errorf("ExtendToken(%s): validity %s left, above the %s TTL", given, left, want)
		}
		awaitDelayedOnNodes(t, other, lock, want, 3)
	}
}

// awaitDelayedOnNodes polls until want nodes hold lock's key with more
// than ttl to live: the delay is on them.
func awaitDelayedOnNodes(t *testing.T, c *redlock.Client, lock *redlock.Lock, ttl time.Duration, want int) {
	t.Helper()
	var states []redlock.NodeState
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		states, err = c.Inspect(bg, lock.Key())
		n := 0
		for _, s := range states {
			if s.Holder == lock.Token() && s.TTL > ttl {
				n++
			}
		}
		if err == nil && n >= want {
			return
		}
	}
	t.Fatalf("Inspect %+v, %v: want %d nodes holding the key with more than %s to live", states, err, want, ttl)
}

// On a Redis Cluster as one node, the delay is on the key's shard, and a
// release still frees the lock at once.
func TestWithLockDelay_redisCluster(t *testing.T) {
	t.Parallel()
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	for _, a := range clusterAdapters {
		t.Run(a.name, func(t *testing.T) {
			c := clusterClient(t, cluster, a.conn, &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 500 * time.Millisecond})
			delayedThenReleased(t, c, 1)
		})
	}
}

// Over Sentinel-managed masters, likewise.
func TestWithLockDelay_sentinel(t *testing.T) {
	masters := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	_, urls := monitorEach(t, masters)
	forEachDialer(t, func(t *testing.T, d dialer) {
		c, err := d.dial(bg, urls, fast())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.MarkReady(bg, false); err != nil && !errors.Is(err, redlock.ErrNotBrandNew) {
			t.Fatal(err)
		}
		delayedThenReleased(t, c, 3)
	})
}

// delayedThenReleased takes a lock with a delay on c, checks that nodes
// of c keep it past its TTL, and that a release frees it at once.
func delayedThenReleased(t *testing.T, c *redlock.Client, nodes int) {
	t.Helper()
	const ttl = time.Second
	lock, err := c.Acquire(bg, "job", redlock.WithTTL(ttl), redlock.WithLockDelay(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	awaitDelayedOnNodes(t, c, lock, ttl, nodes)
	if err := lock.Extend(bg, 0); err != nil {
		t.Fatal(err)
	}
	awaitDelayedOnNodes(t, c, lock, ttl, nodes)
	if err := lock.Release(bg); err != nil {
		t.Fatal(err)
	}
	again, err := c.TryAcquire(bg, "job")
	if err != nil {
		t.Fatalf("after a release: %v", err)
	}
	again.Release(bg)
}

// onlyTheDelayLeft waits until key has at most delay left on every node of
// cluster: the TTL of the lock that holds it ran out there, and only its
// lock-delay keeps it.
func onlyTheDelayLeft(t *testing.T, cluster *redlocktest.Cluster, key string, delay time.Duration) {
	t.Helper()
	eventually(t, "the TTL of "+key+" run out on every node", func() bool {
		for _, n := range cluster.Nodes() {
			if ms, _ := strconv.Atoi(do(t, n, "PTTL", key)); ms > int(delay.Milliseconds()) {
				return false
			}
		}
		return true
	})
}

// Once a holder's TTL ran out, a lock kept only by its lock-delay keeps
// others out, but its holder is no longer current: Check, CheckFence and
// an election's Leader say so, as its own Lock and ExtendToken do.
func TestWithLockDelay_expiredHolderIsNotCurrent(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	c := newClient(t, cluster, adapters[0], &redlock.Options{TTL: time.Second, RecoveryDelay: 10 * time.Second})
	lock, err := c.TryAcquire(bg, "delayed", redlock.WithLockDelay(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Check(bg, "delayed", lock.Token())
	if err != nil || !r.Current {
		t.Fatalf("Check while the lock is valid: %+v %v, want current", r, err)
	}
	// Past its TTL on every node (the delay keeps the key for 5 s more).
	eventually(t, "the TTL ran out on every node", func() bool {
		states, err := c.Inspect(bg, "delayed")
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range states {
			if st.Holder != lock.Token() || !st.DelayOnly {
				return false
			}
		}
		return true
	})
	if r, err := c.Check(bg, "delayed", lock.Token()); err != nil || r.Current || r.Holder.Token != "" {
		t.Errorf("Check once only the lock-delay keeps the key: %+v %v, want not current, held by nobody", r, err)
	}
	if r, err := c.CheckFence(bg, "delayed", lock.Fence()); err != nil || r.Current {
		t.Errorf("CheckFence once only the lock-delay keeps the key: %+v %v, want not current", r, err)
	}
	if _, err := c.TryAcquire(bg, "delayed"); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Errorf("TryAcquire during the lock-delay: %v, want ErrNotAcquired", err)
	}
	// The lock of an election's name is its leader's lead.
	e, err := c.NewElection("delayed")
	if err != nil {
		t.Fatal(err)
	}
	if l, err := e.Leader(bg); !errors.Is(err, redlock.ErrNoLeader) {
		t.Errorf("Leader once only the lock-delay keeps the key: %+v %v, want ErrNoLeader", l, err)
	}
}

// A reader kept only by its lock-delay keeps writers out, but is no longer
// current: Inspect says so, and Check does not count it.
func TestWithLockDelay_expiredReaderIsNotCurrent(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	c := newClient(t, cluster, adapters[0], &redlock.Options{TTL: time.Second, RecoveryDelay: 10 * time.Second})
	reader, err := c.TryAcquire(bg, "delayed", redlock.WithShared(), redlock.WithLockDelay(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.Check(bg, "delayed", reader.Token()); err != nil || !r.Current || !r.Shared {
		t.Fatalf("Check while the reader is valid: %+v %v, want current, shared", r, err)
	}
	eventually(t, "the reader's TTL ran out on every node", func() bool {
		states, err := c.Inspect(bg, "delayed")
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range states {
			if !slices.Equal(st.Readers, []string{reader.Token()}) || !slices.Equal(st.DelayOnlyReaders, st.Readers) {
				return false
			}
		}
		return true
	})
	if r, err := c.Check(bg, "delayed", reader.Token()); err != nil || r.Current || r.Shared {
		t.Errorf("Check once only the lock-delay keeps the reader: %+v %v, want not current, not shared", r, err)
	}
	if _, err := c.TryAcquire(bg, "delayed"); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Errorf("a writer's TryAcquire during the reader's lock-delay: %v, want ErrNotAcquired", err)
	}
}
