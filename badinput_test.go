package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
)

func TestNew_refusesOptionsNoNodeCanMeet(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	for name, opts := range map[string]redlock.Options{
		"NaN drift":         {DriftFactor: math.NaN()},
		"infinite drift":    {DriftFactor: math.Inf(1)},
		"1ns node timeout":  {NodeTimeout: time.Nanosecond},
		"negative timeout":  {NodeTimeout: -time.Second},
		"999µs per node":    {NodeTimeout: 999 * time.Microsecond},
		"negative recovery": {RecoveryDelay: -time.Second},
		"max under timeout": {NodeTimeout: 100 * time.Millisecond, MaxNodeTimeout: 50 * time.Millisecond},
		"max under default": {MaxNodeTimeout: 10 * time.Millisecond},
		"negative max":      {MaxNodeTimeout: -time.Second},
		// Every lock key would begin like the library's own keys.
		"fence prefix":  {KeyPrefix: "redlock:fence:"},
		"marker prefix": {KeyPrefix: "redlock:markers:"},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := redlock.New(goredisConns(t, cluster.Addrs()), &opts)
			if !errors.Is(err, redlock.ErrInvalidOptions) {
				if c != nil {
					c.Close()
				}
				t.Fatalf("New(%+v) = %v, want ErrInvalidOptions", opts, err)
			}
		})
	}
}

// A node list holding nil, or a Conn that is a nil pointer (declared and
// never dialed), fails New with ErrInvalidOptions rather than a panic.
func TestNew_nilConnRefused(t *testing.T) {
	var undialed *goredis.Conn
	for name, conns := range map[string][]redlock.Conn{"nil": {nil}, "nil pointer": {undialed}} {
		if c, err := redlock.New(conns, nil); !errors.Is(err, redlock.ErrInvalidOptions) || c != nil {
			t.Errorf("%s: New = %v, %v; want ErrInvalidOptions", name, c, err)
		}
	}
}

// ExponentialJitter keeps its delays within max, even a max below base.
func TestExponentialJitter_staysWithinMax(t *testing.T) {
	for _, tc := range []struct{ base, max, want time.Duration }{
		{time.Second, 10 * time.Millisecond, 10 * time.Millisecond},
		{10 * time.Millisecond, 40 * time.Millisecond, 40 * time.Millisecond},
		{0, 0, time.Millisecond},
	} {
		r := redlock.ExponentialJitter(tc.base, tc.max)
		for attempt := 2; attempt < 40; attempt++ {
			if d, ok := r.NextDelay(attempt); !ok || d > tc.want || d < 0 {
				t.Fatalf("ExponentialJitter(%v, %v).NextDelay(%d) = %v, %v; want at most %v", tc.base, tc.max, attempt, d, ok, tc.want)
			}
		}
	}
}

// Every call given a nil context fails with ErrNilContext, but a release,
// which runs whatever its context, and the lookups that cannot fail.
func TestNilContext_failsClearlyOrReleases(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		c := newClient(t, cluster, a, fast())
		lock, err := c.Acquire(bg, "nil-ctx")
		if err != nil {
			t.Fatal(err)
		}
		locks, err := c.TryAcquireAll(bg, []string{"nil-ctx-a", "nil-ctx-b"})
		if err != nil {
			t.Fatal(err)
		}
		noop := func(context.Context) error { return nil }
		for call, f := range map[string]func(context.Context) error{
			"Acquire":       func(ctx context.Context) error { _, err := c.Acquire(ctx, "nil-ctx-2"); return err },
			"TryAcquire":    func(ctx context.Context) error { _, err := c.TryAcquire(ctx, "nil-ctx-2"); return err },
			"AcquireAll":    func(ctx context.Context) error { _, err := c.AcquireAll(ctx, []string{"k1"}); return err },
			"TryAcquireAll": func(ctx context.Context) error { _, err := c.TryAcquireAll(ctx, []string{"k1"}); return err },
			"Do":            func(ctx context.Context) error { return c.Do(ctx, "nil-ctx-2", noop) },
			"Inspect":       func(ctx context.Context) error { _, err := c.Inspect(ctx, "nil-ctx"); return err },
			"MarkReady":     func(ctx context.Context) error { return c.MarkReady(ctx, false) },
			"Lock.Extend":   func(ctx context.Context) error { return lock.Extend(ctx, 0) },
			"Locks.Extend":  func(ctx context.Context) error { return locks.Extend(ctx, 0) },
			"ExtendToken":   func(ctx context.Context) error { _, err := c.ExtendToken(ctx, "nil-ctx", lock.Token(), 0); return err },
		} {
			//lint:ignore SA1012 a nil context is the bad input under test
			if err := f(nil); !errors.Is(err, redlock.ErrNilContext) || !strings.Contains(err.Error(), "context.Background()") {
				t.Errorf("%s(nil) = %v, want ErrNilContext saying what to pass", call, err)
			}
		}
		// A release runs whatever its context: nothing stays locked.
		//lint:ignore SA1012 as above
		if err := lock.Release(nil); err != nil {
			t.Fatalf("Release(nil) = %v", err)
		}
		//lint:ignore SA1012 as above
		if err := locks.Release(nil); err != nil {
			t.Fatalf("Locks.Release(nil) = %v", err)
		}
		// LockFromContext finds no lock in a nil context; Observe takes it
		// as context.Background(), ending with the Client.
		//lint:ignore SA1012 as above
		if l, ok := redlock.LockFromContext(nil); l != nil || ok {
			t.Errorf("LockFromContext(nil) = %v, %v; want nil, false", l, ok)
		}
		e, err := c.NewElection("nil-ctx-election")
		if err != nil {
			t.Fatal(err)
		}
		//lint:ignore SA1012 as above
		if l, ok := <-e.Observe(nil); !ok || !l.Vacant() {
			t.Errorf("Observe(nil) sent %+v, %v; want the vacancy", l, ok)
		}
		for i, n := range cluster.Nodes() {
			// Release returns at a quorum; the other nodes follow.
			for _, key := range []string{"nil-ctx", "nil-ctx-a", "nil-ctx-b"} {
				if v := eventuallyGone(t, n, key); v != "" {
					t.Errorf("node %d still holds %q: %q after Release(nil)", i, key, v)
				}
			}
		}
	})
}

// Dial given a nil context fails with ErrNilContext, with either adapter.
func TestDial_nilContext(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	forEachDialer(t, func(t *testing.T, d dialer) {
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			//lint:ignore SA1012 a nil context is the bad input under test
			client, err := d.dial(nil, cluster.URLs(), nil)
			if err == nil {
				client.Close()
			}
			return err
		}()
		if !errors.Is(err, redlock.ErrNilContext) {
			t.Errorf("Dial(nil, …) = %v, want ErrNilContext", err)
		}
	})
}

func TestLongKey_refusedWithAShortMessage(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	c := newClient(t, cluster, adapters[0], fast())
	huge := strings.Repeat("k", 1<<20)
	_, err := c.TryAcquire(bg, huge)
	if !errors.Is(err, redlock.ErrInvalidKey) {
		t.Fatalf("TryAcquire(1 MiB key) = %v, want ErrInvalidKey", err)
	}
	if n := len(err.Error()); n > 300 {
		t.Errorf("error of %d bytes for a long key: %.100s…", n, err)
	}
	// The longest key accepted: errors quote it shortened.
	longest := strings.Repeat("x", 4096)
	lock, err := c.TryAcquire(bg, longest)
	if err != nil {
		t.Fatalf("TryAcquire(4096-byte key) = %v", err)
	}
	_, err = c.TryAcquire(bg, longest)
	if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("second TryAcquire = %v, want ErrNotAcquired", err)
	}
	if n := len(err.Error()); n > 400 || !strings.Contains(err.Error(), "4096 bytes") {
		t.Errorf("error of %d bytes does not quote the key shortened: %.200s", n, err)
	}
	if err := lock.Release(bg); err != nil {
		t.Fatal(err)
	}
}

// MarkReady is an operator's call: a node slower than the lock's per-node
// timeout is still marked.
func TestMarkReady_waitsForASlowNode(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	c, err := redlock.New(goredisConns(t, cluster.Addrs()), &redlock.Options{NodeTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	node := cluster.Node(0)
	if err := node.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		resumed <- node.Resume()
	}()
	if err := c.MarkReady(bg, false); err != nil {
		t.Errorf("MarkReady on a node 300 ms slow = %v", err)
	}
	if err := <-resumed; err != nil {
		t.Fatal(err)
	}
	if v := keyOn(t, node, redlock.MarkerKey); v != "0" {
		t.Errorf("marker %q after MarkReady, want 0", v)
	}
}

// A TTL whose sum with the recovery delay, for which a lock's fencing
// counter outlives the lock, is beyond a time.Duration fails TryAcquire and
// Acquire at once with ErrInvalidTTL, where the sum would wrap negative
// and every node refuse it; New refuses such options likewise. The longest
// TTL within the limit locks.
func TestTTL_beyondADurationWithTheRecoveryDelay(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	opts := fast()
	opts.DisableQuarantine = true // else the recovery delay bounds the TTL
	c := newClient(t, cluster, adapters[0], opts)
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	for _, ttl := range []time.Duration{math.MaxInt64, math.MaxInt64 - 30*time.Second + time.Millisecond} {
		if _, err := c.TryAcquire(bg, "forever", redlock.WithTTL(ttl)); !errors.Is(err, redlock.ErrInvalidTTL) {
			t.Errorf("TryAcquire(WithTTL(%d)) = %v, want ErrInvalidTTL", ttl, err)
		}
		if _, err := c.Acquire(ctx, "forever", redlock.WithTTL(ttl)); !errors.Is(err, redlock.ErrInvalidTTL) || ctx.Err() != nil {
			t.Errorf("Acquire(WithTTL(%d)) = %v, want ErrInvalidTTL at once", ttl, err)
		}
	}
	longest := time.Duration(math.MaxInt64) - 30*time.Second
	for name, opt := range map[string]redlock.LockOption{"mutex": nil, "shared": redlock.WithShared(), "permit": redlock.WithLimit(2)} {
		opts := []redlock.LockOption{redlock.WithTTL(longest)}
		if opt != nil {
			opts = append(opts, opt)
		}
		lock, err := c.TryAcquire(bg, "longest-"+name, opts...)
		if err != nil {
			t.Errorf("%s with the longest TTL: %v", name, err)
			continue
		}
		if err := lock.Release(bg); err != nil {
			t.Errorf("release of the %s: %v", name, err)
		}
	}
	for _, o := range []redlock.Options{{RecoveryDelay: math.MaxInt64}, {TTL: math.MaxInt64, DisableQuarantine: true}} {
		if c, err := redlock.New(goredisConns(t, cluster.Addrs()), &o); !errors.Is(err, redlock.ErrInvalidTTL) {
			if c != nil {
				c.Close()
			}
			t.Errorf("New(%+v) = %v, want ErrInvalidTTL", o, err)
		}
	}
}

// A TTL refused is printed as the caller gave it, not as truncated to
// Redis's milliseconds.
func TestTTL_refusedAsGiven(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	c := newClient(t, cluster, adapters[0], fast())
	lock, err := c.TryAcquire(bg, "given")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(bg)
	for _, tc := range []struct {
		ttl  time.Duration
		want string
	}{
		{time.Microsecond, "1µs is below Redis's 1 ms resolution"},
		{999 * time.Microsecond, "999µs is below"},
		{2500 * time.Microsecond, "2.5ms (2ms at Redis's 1 ms resolution) leaves no validity"},
	} {
		for call, err := range map[string]error{
			"TryAcquire":  second(c.TryAcquire(bg, "given-2", redlock.WithTTL(tc.ttl))),
			"Extend":      lock.Extend(bg, tc.ttl),
			"ExtendToken": second(c.ExtendToken(bg, "given", lock.Token(), tc.ttl)),
		} {
			if !errors.Is(err, redlock.ErrInvalidTTL) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s with a TTL of %s: %v, want ErrInvalidTTL saying %q", call, tc.ttl, err, tc.want)
			}
		}
	}
	if _, err := redlock.New(goredisConns(t, cluster.Addrs()), &redlock.Options{TTL: time.Microsecond}); err == nil || !strings.Contains(err.Error(), "1µs is below") {
		t.Errorf("New with a 1µs TTL: %v", err)
	}
}

// second returns the second of two results.
func second[T any](_ T, err error) error { return err }

// An empty token, or a fencing token 0, names no lock: Check, CheckFence,
// ReleaseToken and ExtendToken fail with ErrInvalidToken and send nothing,
// and Do with a nil fn fails with ErrInvalidOptions and takes nothing.
func TestEmptyTokenAndNilFn_failFast(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	c := newClient(t, cluster, adapters[0], fast())
	node := cluster.Node(0)
	sent := scriptCallsOn(t, node)
	for call, err := range map[string]error{
		"Check":        second(c.Check(bg, "k", "")),
		"CheckFence":   second(c.CheckFence(bg, "k", 0)),
		"ReleaseToken": c.ReleaseToken(bg, "k", ""),
		"ExtendToken":  second(c.ExtendToken(bg, "k", "", 0)),
	} {
		if !errors.Is(err, redlock.ErrInvalidToken) {
			t.Errorf("%s of an empty token: %v, want ErrInvalidToken", call, err)
		}
	}
	if err := c.Do(bg, "k", nil); !errors.Is(err, redlock.ErrInvalidOptions) {
		t.Errorf("Do with a nil fn: %v, want ErrInvalidOptions", err)
	}
	if now := scriptCallsOn(t, node); now != sent {
		t.Errorf("%d script calls sent for calls that fail on their arguments", now-sent)
	}
	if v := keyOn(t, node, "k"); v != "" {
		t.Errorf("Do with a nil fn left the key set to %q", v)
	}
}

// A release or an extension that nodes refuse for a reason no retry fixes
// (the key holds another program's hash) says so: ErrInvalidOptions, with
// ErrNotReleased for the release.
func TestReleaseToken_keyOfAnotherTypeFailsForGood(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	c := newClient(t, cluster, adapters[0], fast())
	for _, n := range cluster.Nodes() {
		do(t, n, "HSET", "settings", "f", "v")
	}
	err := c.ReleaseToken(bg, "settings", "some-token")
	if !errors.Is(err, redlock.ErrNotReleased) || !errors.Is(err, redlock.ErrInvalidOptions) {
		t.Errorf("ReleaseToken of a hash: %v, want ErrNotReleased and ErrInvalidOptions", err)
	}
	_, err = c.ExtendToken(bg, "settings", "some-token", time.Second)
	if !errors.Is(err, redlock.ErrInvalidOptions) {
		t.Errorf("ExtendToken of a hash: %v, want ErrInvalidOptions", err)
	}
}

// A nil LockOption, as an option chosen by a condition may be, changes
// nothing: the call runs with the others, and does not panic.
func TestNilLockOption_changesNothing(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	c := newClient(t, cluster, adapters[0], fast())
	var none redlock.LockOption
	lock, err := c.TryAcquire(bg, "k", none, redlock.WithTTL(5*time.Second), nil)
	if err != nil {
		t.Fatalf("TryAcquire with nil options: %v", err)
	}
	defer lock.Release(bg)
	if ms, _ := strconv.Atoi(do(t, cluster.Node(0), "PTTL", "k")); ms <= 1000 || ms > 5000 {
		t.Errorf("PTTL %d ms, want the WithTTL given beside the nil options (5 s)", ms)
	}
}
