package redlock_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	goredisv9 "github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/internal/hashslot"
	"github.com/redlock-go/redlock/redlocktest"
)

// What goes on the wire stays portable: a script touches only the keys
// its call declares in KEYS (Dragonfly refuses any other), and, with the
// keys laid out for a Redis Cluster, publishes only on channels of those
// keys' slot (ElastiCache Serverless turns a script's PUBLISH into
// SPUBLISH, which must stay in the script's slot). Redis checks neither by
// itself: a script sent by EVAL, which has no flags, may touch any key of
// its node, in cluster mode too, where it runs with cross-slot access
// allowed (script.c, SCRIPT_FLAG_EVAL_COMPAT_MODE). An ACL does: Redis
// checks each command a script runs against the user's key and channel
// patterns, on 6.2 as on 7.x. Every script call of the client here runs as
// a user allowed exactly the keys the call declares (declaredOnly), while
// the test makes every kind of call the client makes, and checks that each
// of the library's scripts ran.
//
// Over independent servers the scripts run once by EVALSHA and once as
// functions of the library, by FCALL, which Redis checks against the ACL
// in the same way.
func TestWire_scriptsTouchOnlyDeclaredKeysAndPublishInTheirSlot(t *testing.T) {
	t.Run("independent servers", func(t *testing.T) { checkDeclaredOnly(t, false, false) })
	t.Run("independent servers, functions", func(t *testing.T) {
		needs(t, redlocktest.Functions)
		checkDeclaredOnly(t, false, true)
	})
	t.Run("redis cluster layout", func(t *testing.T) { checkDeclaredOnly(t, true, false) })
}

// checkDeclaredOnly makes every kind of call of a client over three nodes
// under declaredOnly, with the keys laid out for a Redis Cluster or not,
// and the scripts run as functions or not.
func checkDeclaredOnly(t *testing.T, cluster, functions bool) {
	nodes := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	ran := &scriptsRun{counts: map[string]int{}}
	newClient := func(user string) *redlock.Client {
		var conns []redlock.Conn
		for _, n := range nodes.Nodes() {
			conns = append(conns, declaredConn(newDeclaredOnly(t, n, user, cluster, ran), functions))
		}
		c, err := redlock.New(conns, &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	wantRefused(t, newDeclaredOnly(t, nodes.Node(0), "control", cluster, ran))
	client, other := newClient("first"), newClient("second")
	ctx, cancel := context.WithTimeout(bg, time.Minute)
	defer cancel()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	const key = "orders:42"
	if cluster {
		// MarkReady marks each of the 16,384 slots, two checked script
		// calls per slot and node: a minute under the race detector.
		// Its scripts are checked over independent servers, where they
		// are the same but for the names of the marker keys; here the
		// slots the test uses are marked ready by hand.
		for _, k := range []string{key, "busy", "split", "doc", "pool:permit:1", "pool:permit:2", "a", "b", "user:{7}:cart"} {
			for _, n := range nodes.Nodes() {
				do(t, n, "SET", redlock.SlotMarkerKey(hashslot.Of(k)), "0")
			}
		}
		// A slot not marked: the acquisition starts its quarantine.
		if _, err := client.TryAcquire(ctx, "fresh"); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("try acquire in a slot not marked ready: %v", err)
		}
	} else {
		must("mark ready", client.MarkReady(ctx, false))
	}
	// Counters far ahead, apart, on two of the three nodes: any quorum that
	// grants disagrees on the counter (the acquisition returns at a quorum,
	// which need not hear every node), and the nodes behind are raised.
	do(t, nodes.Node(0), "SET", redlock.FenceKeyIn(key, cluster), "9000000000000000000")
	do(t, nodes.Node(1), "SET", redlock.FenceKeyIn(key, cluster), "8000000000000000000")
	l, err := client.TryAcquire(ctx, key)
	must("try acquire", err)
	must("extend", l.Extend(ctx, 10*time.Second))
	_, err = client.Inspect(ctx, key)
	must("inspect", err)
	_, err = other.ExtendToken(ctx, key, l.Token(), 0)
	must("extend by token", err)
	must("release", l.Release(ctx))

	l, err = client.Acquire(ctx, key)
	must("acquire", err)
	// A goroutine of the same client waits: the release carries its attempt.
	handedOver := acquireLater(client, key, redlock.WithRetry(redlock.Jittered(time.Minute, time.Minute)))
	eventually(t, "the waiter's attempt offered to the release", func() bool { return client.HandoffParked(key) })
	must("release", l.Release(ctx))
	if l = <-handedOver; l == nil {
		t.Fatal("the handoff failed")
	}
	// A client that waits, queued on the nodes, until the key is free,
	// and renews its place as a listening waiter does during a long
	// retry delay (these connections do not listen).
	waiter := acquireLater(other, key)
	queue := redlock.QueueKeyIn(key, cluster)
	// Not the count of the queue: the nodes may keep an entry of the
	// first client, lapsed, from an attempt that met its release late.
	eventually(t, "the waiter queued", func() bool { return do(t, nodes.Node(0), "ZSCORE", queue, other.ID()) != "" })
	other.KeepPlace(ctx, key, do(t, nodes.Node(0), "ZSCORE", queue, other.ID()))
	must("release by token", client.ReleaseToken(ctx, key, l.Token()))
	if l = <-waiter; l == nil {
		t.Fatal("the queued waiter failed")
	}
	must("release", l.Release(ctx))

	// A failed attempt, granted on one node, released there.
	for _, n := range nodes.Nodes()[:2] {
		do(t, n, "SET", "busy", "foreign", "PX", "60000")
	}
	if _, err := client.TryAcquire(ctx, "busy"); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("try acquire a key held on two nodes: %v", err)
	}

	// A lock won while another value held one node: a renewal takes it
	// there once the key is free (Lock.reclaim).
	do(t, nodes.Node(2), "SET", "split", "foreign")
	split, err := client.TryAcquire(ctx, "split", redlock.WithAutoRenew(), redlock.WithTTL(3*time.Second))
	must("acquire beside a foreign value", err)
	// TryAcquire returns at a quorum: node 2 refuses the attempt before the
	// key is freed there, or the attempt itself takes it.
	eventually(t, "node 2 answered the attempt", func() bool { return ran.count(answeredOn(nodes.Node(2).Addr(), "split")) > 0 })
	do(t, nodes.Node(2), "DEL", "split")
	eventually(t, "a renewal took the lock on the node freed", func() bool { return ran.count("reclaim") > 0 })
	must("release the renewed lock", split.Release(ctx))

	readers := make([]*redlock.Lock, 2)
	for i := range readers {
		readers[i], err = client.TryAcquire(ctx, "doc", redlock.WithShared())
		must("reader", err)
	}
	must("extend a reader", readers[0].Extend(ctx, 10*time.Second))
	for _, r := range readers {
		must("release a reader", r.Release(ctx))
	}
	permits := make([]*redlock.Lock, 2)
	for i := range permits {
		permits[i], err = client.TryAcquire(ctx, "pool", redlock.WithLimit(2))
		must("permit", err)
	}
	for _, p := range permits {
		must("release a permit", p.Release(ctx))
	}
	if _, err := client.TryAcquire(ctx, key); err != nil {
		t.Fatalf("acquire: %v", err)
	}
	_, err = client.ForceRelease(ctx, key, "ops")
	must("force release", err)
	all, err := client.AcquireAll(ctx, []string{"a", "b", "user:{7}:cart"})
	must("acquire all", err)
	must("release all", all.Release(ctx))
	// An election's observer sets the waiting mark of the key it listens
	// for before its first read.
	election, err := client.NewElection("leader")
	must("new election", err)
	observing, stopObserving := context.WithCancel(ctx)
	changes := election.Observe(observing)
	if _, ok := <-changes; !ok {
		t.Fatal("the observer ended before its first observation")
	}
	stopObserving()
	for range changes {
	}

	// Requests of concurrent calls to one node share a script call.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for ran.count("batch") == 0 && ctx.Err() == nil {
				if l, err := client.TryAcquire(ctx, fmt.Sprint("user:{7}:", i)); err == nil {
					l.Release(ctx)
				}
			}
		})
	}
	wg.Wait()

	wantTransport(t, ran, functions)
	for _, name := range redlock.ScriptNames {
		switch {
		case (name == "shardedRelease" || name == "shardedForceRelease") && !cluster:
			continue
		case (name == "release" || name == "forceRelease" || name == "markReady" || name == "markerState") && cluster:
			continue
		case name == "listScan":
			// Client.List's scan reads the keys SCAN returns, which no call
			// can declare, a few bytes each, and writes nothing (see
			// lua/list_scan.lua); TestList_redisCluster runs it on a cluster.
			continue
		}
		if ran.count(name) == 0 {
			t.Errorf("the %s script never ran: the test does not check it", name)
		}
	}
}

// declaredConn returns c, as a declaredOnlyFunctions when functions.
func declaredConn(c *declaredOnly, functions bool) redlock.Conn {
	if functions {
		return declaredOnlyFunctions{c}
	}
	return c
}

// wantTransport fails the test unless the library's scripts ran only as
// functions, by FCALL, when functions is true.
func wantTransport(t *testing.T, ran *scriptsRun, functions bool) {
	t.Helper()
	if byFCALL, byEVALSHA := ran.count("by FCALL"), ran.count("by EVALSHA"); functions && (byFCALL == 0 || byEVALSHA > 0) {
		t.Errorf("%d calls by FCALL and %d by EVALSHA, want only FCALL", byFCALL, byEVALSHA)
	}
}

// checkedPassword is the password of declaredOnly's users.
const checkedPassword = "declared-only"

// declaredOnly is a Conn to one node that runs each script call as an ACL
// user allowed exactly the keys the call declares in KEYS, and the
// channels on which a release of those keys is announced: over
// independent servers the keys' release channels, and with the keys laid
// out for a Redis Cluster (IsCluster) the channels of their slot. Redis
// refuses a script's command on any other key or channel, which the test
// reports. Calls are made one at a time: the user's rules are those of the
// call under way. It has no optional capability of Conn but IsCluster:
// waiters poll.
type declaredOnly struct {
	redlock.Conn // logged in as user
	t            *testing.T
	user         string
	cluster      bool
	ran          *scriptsRun
	mu           sync.Mutex
}

// scriptsRun counts the calls of each of the library's scripts.
type scriptsRun struct {
	mu     sync.Mutex
	counts map[string]int
}

func (r *scriptsRun) add(name string) {
	r.mu.Lock()
	r.counts[name]++
	r.mu.Unlock()
}

// answeredOn names, for scriptsRun, the calls whose first key was key
// that node answered.
func answeredOn(node, key string) string { return node + " answered a call on " + key }

func (r *scriptsRun) count(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[name]
}

// newDeclaredOnly makes the ACL user user on node n, allowed every command
// and no key or channel, and returns a Conn logged in as that user.
func newDeclaredOnly(t *testing.T, n *redlocktest.Node, user string, cluster bool, ran *scriptsRun) *declaredOnly {
	do(t, n, "ACL", "SETUSER", user, "reset", "on", ">"+checkedPassword, "+@all")
	conn := goredis.NewOwned(goredisv9.NewClient(&goredisv9.Options{Addr: n.Addr(), Username: user, Password: checkedPassword}))
	t.Cleanup(func() { conn.Close() })
	return &declaredOnly{Conn: conn, t: t, user: user, cluster: cluster, ran: ran}
}

// IsCluster reports whether the client lays its keys out for a Redis
// Cluster.
func (c *declaredOnly) IsCluster() bool { return c.cluster }

// EvalSHA runs the script as a user allowed only its call's keys and
// channels, and reports every command the node refused it.
func (c *declaredOnly) EvalSHA(ctx context.Context, sha1, source string, keys []string, args ...string) (any, error) {
	name, ok := redlock.ScriptNames[source]
	if !ok {
		c.t.Errorf("a script that is not one of the library's: %.60q", source)
	}
	c.ran.add(name)
	c.ran.add("by EVALSHA")
	v, err := c.run(ctx, sha1, source, keys, args...)
	c.checked(name, keys, args, v, err)
	return v, err
}

// run sets the user's rules for a call with keys, and runs the script.
func (c *declaredOnly) run(ctx context.Context, sha1, source string, keys []string, args ...string) (any, error) {
	return c.under(ctx, keys, func() (any, error) { return c.Conn.EvalSHA(ctx, sha1, source, keys, args...) })
}

// under sets the user's rules for a call with keys, and makes the call.
func (c *declaredOnly) under(ctx context.Context, keys []string, call func() (any, error)) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rules := []string{"ACL", "SETUSER", c.user, "resetkeys"}
	for _, k := range keys {
		rules = append(rules, "~"+globEscape(k))
	}
	rules = append(rules, "resetchannels")
	rules = append(rules, c.channels(keys)...)
	if _, err := c.Conn.Do(ctx, rules...); err != nil {
		return nil, fmt.Errorf("set the rules of %s: %w", c.user, err)
	}
	return call()
}

// checked reports every command the node refused the named script or
// function in its reply v or error err.
func (c *declaredOnly) checked(name string, keys, args []string, v any, err error) {
	if len(keys) > 0 {
		c.ran.add(answeredOn(c.Conn.Name(), keys[0]))
	}
	refusals := []error{err}
	if replies, ok := v.([]any); ok {
		for _, r := range replies {
			if e, ok := r.(error); ok {
				refusals = append(refusals, e)
			}
		}
	}
	for _, e := range refusals {
		if refused(e) {
			c.t.Errorf("the %s script touched a key it does not declare, or a channel outside their slot: %v\nKEYS %q\nARGV %q", name, e, keys, args)
		}
	}
}

// declaredOnlyFunctions is a declaredOnly Conn that calls the library's
// functions by FCALL, under the same rules.
type declaredOnlyFunctions struct{ *declaredOnly }

// FCall calls the function as a user allowed only its call's keys and
// channels, and reports every command the node refused it.
func (c declaredOnlyFunctions) FCall(ctx context.Context, function string, keys []string, args ...string) (any, error) {
	name, ok := redlock.FunctionNames[function]
	if !ok {
		c.t.Errorf("a function that is not one of the library's: %q", function)
	}
	c.ran.add(name)
	c.ran.add("by FCALL")
	v, err := c.under(ctx, keys, func() (any, error) {
		return c.Conn.(redlock.FunctionCaller).FCall(ctx, function, keys, args...)
	})
	c.checked(name, keys, args, v, err)
	return v, err
}

// channels returns the channel rules for a call that declares keys.
func (c *declaredOnly) channels(keys []string) []string {
	if len(keys) == 0 {
		return nil
	}
	if !c.cluster {
		var rules []string
		for _, k := range keys {
			channel := globEscape(redlock.ReleaseChannel(k, false))
			// An ACL pattern has no space: "?" stands for the one before
			// a client's id.
			rules = append(rules, "&"+channel, "&"+channel+"?*")
		}
		return rules
	}
	slot := hashslot.Of(keys[0])
	for _, k := range keys[1:] {
		if hashslot.Of(k) != slot {
			c.t.Errorf("a call's keys in several slots, which a Redis Cluster refuses: %q", keys)
		}
	}
	// Whatever follows it, a channel that begins with the prefix has the
	// slot's tag as its hash tag: it lies in the slot.
	prefix := "redlock:released:{" + hashslot.Tag(slot) + "}"
	if hashslot.Of(prefix+"any") != slot {
		c.t.Fatalf("channel prefix %q is not in slot %d", prefix, slot)
	}
	return []string{"&" + globEscape(prefix) + "*"}
}

// refused reports whether err is a node's refusal of a script's command
// for the user's ACL: a key or a channel it may not use (Redis 6.2 and
// 7.x).
func refused(err error) bool {
	msg := fmt.Sprint(err)
	return err != nil && (strings.Contains(msg, "executing the script can't") || strings.Contains(msg, "NOPERM") ||
		strings.Contains(msg, "ACL failure in script")) // Valkey
}

// globEscape escapes the characters of s that an ACL pattern reads as a
// glob.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\*?[]`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// wantRefused fails unless the node refuses a script of c a key its call
// does not declare, and a channel outside the keys' release channels or
// slot: the check works.
func wantRefused(t *testing.T, c *declaredOnly) {
	t.Helper()
	for _, source := range []string{
		`return redis.call("GET", "undeclared")`,
		`return redis.call("PUBLISH", "elsewhere", "x")`,
		`return redis.call("SET", KEYS[1] .. "x", "1")`,
	} {
		sum := sha1.Sum([]byte(source))
		if _, err := c.run(bg, hex.EncodeToString(sum[:]), source, []string{"declared"}); !refused(err) {
			t.Fatalf("%s with KEYS [declared]: %v, want a refusal", source, err)
		}
	}
	sum := sha1.Sum([]byte(`return redis.call("SET", KEYS[1], "1")`))
	if _, err := c.run(bg, hex.EncodeToString(sum[:]), `return redis.call("SET", KEYS[1], "1")`, []string{"declared"}); err != nil {
		t.Fatalf("a declared key refused: %v", err)
	}
}
