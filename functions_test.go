package redlock_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
)

// asRedis62 is the configuration that makes the redis-server the tests
// start answer the library as Redis 6.2 does: none when it is a 6.x release
// (put a 6.2 build first on PATH to run the tests on it), else FUNCTION,
// FCALL and the read-only script commands renamed away, which 7.0 added
// and 6.2 calls unknown.
func asRedis62(t *testing.T) []string {
	t.Helper()
	v, err := redlocktest.ServerVersion("")
	if err != nil {
		t.Fatal(err)
	}
	if !v.AtLeast(7, 0) {
		return nil
	}
	var config []string
	for _, cmd := range []string{"FUNCTION", "FCALL", "FCALL_RO", "EVALSHA_RO", "EVAL_RO"} {
		config = append(config, "rename-command "+cmd+` ""`)
	}
	return config
}

// On Redis 7 the scripts run as functions of one library, loaded on first
// use: a cycle costs two FCALL and no EVALSHA, and the library reads the
// node's run_id once for the process, not once per call.
func TestFunctions_runIDReadOncePerProcess(t *testing.T) {
	needs(t, redlocktest.Functions)
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
		node := cluster.Node(0)
		c, err := redlock.New(a.conns(t, cluster.Addrs()), fast())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.MarkReady(bg, false); err != nil { // loads the library, reads the run_id
			t.Fatal(err)
		}
		do(t, node, "CONFIG", "RESETSTAT")
		const cycles = 20
		for i := range cycles {
			lockAndRelease(t, c, "job-"+strconv.Itoa(i))
		}
		// A release may still be under way on the node: poll the key, not
		// INFO, which counts itself.
		eventually(t, "every release ran", func() bool { return keyOn(t, node, "job-"+strconv.Itoa(cycles-1)) == "" })
		stats := commandStats(t, node) // one read: INFO counts itself
		if n := stats["fcall"]; n != 2*cycles {
			t.Errorf("%d FCALL in %d cycles, want %d", n, cycles, 2*cycles)
		}
		for _, cmd := range []string{"evalsha", "eval", "info"} {
			if n := stats[cmd]; n != 0 {
				t.Errorf("%d %s calls in %d cycles, want none", n, cmd, cycles)
			}
		}
	})
}

// A library flushed from a node (FUNCTION FLUSH, or a restart without
// persistence) is loaded again by the next call, which succeeds.
func TestFunctions_flushedLibraryIsLoadedAgain(t *testing.T) {
	needs(t, redlocktest.Functions)
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
		node := cluster.Node(0)
		c := newClient(t, cluster, a, fast())
		lockAndRelease(t, c, "before")
		do(t, node, "FUNCTION", "FLUSH")
		lockAndRelease(t, c, "after")
		if libs := do(t, node, "FUNCTION", "LIST"); !strings.Contains(libs, redlock.FunctionLibraryName) {
			t.Errorf("FUNCTION LIST after a flush and a cycle has no %s:\n%s", redlock.FunctionLibraryName, libs)
		}
	})
}

// A user whose ACL refuses FCALL and FUNCTION still locks, by EVALSHA, with
// every guarantee: the restart marker is written with its process.
func TestFunctions_refusedByACLFallsBackToScripts(t *testing.T) {
	needs(t, redlocktest.Functions) // the ACL rule -fcall
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	node := cluster.Node(0)
	c := clientAs(t, node, "scripts-only", "-fcall", "-function")
	if err := c.MarkReady(bg, false); err != nil {
		t.Fatalf("MarkReady with FCALL refused: %v", err)
	}
	lockAndRelease(t, c, "refused")
	if n := commandCalls(t, node, "evalsha"); n == 0 {
		t.Error("no EVALSHA with FCALL refused")
	}
	if v := keyOn(t, node, redlock.ProcessKey); v == "" {
		t.Error("no process recorded with the marker")
	}
}

// On Redis 6.2, which has no functions, the scripts run by EVALSHA, with
// every guarantee: waiters are woken by a release, and a restart from a
// snapshot puts the node in quarantine. Unless PATH puts a 6.2 build first,
// the servers are later releases told to answer as 6.2 (see asRedis62).
func TestFunctions_redis62RunsScripts(t *testing.T) {
	config := asRedis62(t)
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3, Config: config})
		c := newClient(t, cluster, a, fast())
		lock, err := c.Acquire(bg, "job")
		if err != nil {
			t.Fatal(err)
		}
		// Held until its release below, past the waiter's setup.
		if err := lock.Extend(bg, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		other := newClient(t, cluster, a, &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 300 * time.Millisecond,
			Retry: redlock.Jittered(time.Minute, time.Minute)})
		waiter := acquireLater(other, "job")
		eventually(t, "the waiter queued and listening", func() bool {
			for _, n := range cluster.Nodes() {
				if do(t, n, "EXISTS", redlock.QueueKeyIn("job", false)) != "1" || do(t, n, "PUBSUB", "CHANNELS", redlock.ReleaseChannel("job", false)+" "+other.ID()) == "" {
					return false
				}
			}
			return true
		})
		if err := lock.Release(bg); err != nil {
			t.Fatal(err)
		}
		// Its retry delay is a minute: only the release's wake-up makes
		// it try within the 10 s of acquireLater.
		got := <-waiter
		if got == nil {
			t.Fatal("the waiter was not woken by the release")
		}
		got.Release(bg)
		for _, n := range cluster.Nodes() {
			if calls := commandCalls(t, n, "evalsha"); calls == 0 {
				t.Errorf("node %d ran no EVALSHA", n.Index())
			}
		}
		node := cluster.Node(0)
		if _, err := node.Do(bg, "SAVE"); err != nil {
			t.Fatal(err)
		}
		if err := node.Restart(bg); err != nil {
			t.Fatal(err)
		}
		// The first request on a connection the restart broke may fail.
		var state redlock.NodeState
		eventually(t, "node 0 answers an inspection", func() bool {
			states, err := c.Inspect(bg, "job")
			if err != nil {
				t.Fatal(err)
			}
			state = states[0]
			return state.Err == nil
		})
		if !state.Restarted || !state.Recovering {
			t.Errorf("node 0 after a restart: %+v, want restarted and recovering", state)
		}
	})
}

// userURLs makes user on every node of cluster, an ACL user with every
// key, channel and command but those rules take away, and returns its
// URLs to the nodes.
func userURLs(t *testing.T, cluster *redlocktest.Cluster, user string, rules ...string) []string {
	t.Helper()
	for _, n := range cluster.Nodes() {
		do(t, n, append([]string{"ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all"}, rules...)...)
	}
	return urlsAs(cluster, user)
}

// clientAs returns a Client over node alone, logged in as user, an ACL
// user made with every key, channel and command but those rules take away.
func clientAs(t *testing.T, node *redlocktest.Node, user string, rules ...string) *redlock.Client {
	t.Helper()
	do(t, node, append([]string{"ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all"}, rules...)...)
	conn, err := goredis.NewURL("redis://" + user + ":pw@" + node.Addr())
	if err != nil {
		t.Fatal(err)
	}
	c, err := redlock.New([]redlock.Conn{conn}, fast())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// lockAndRelease takes name by TryAcquire and releases it.
func lockAndRelease(t *testing.T, c *redlock.Client, name string) {
	t.Helper()
	lock, err := c.TryAcquire(bg, name)
	if err != nil {
		t.Fatalf("try acquire %s: %v", name, err)
	}
	if err := lock.Release(bg); err != nil {
		t.Fatalf("release %s: %v", name, err)
	}
}

// commandCalls returns the calls of command on n since its statistics were
// reset (INFO commandstats).
func commandCalls(t *testing.T, n *redlocktest.Node, command string) int64 {
	t.Helper()
	return commandStats(t, n)[command]
}

// commandStats returns the calls of each command on n since its statistics
// were reset, by lower-case name, from one INFO commandstats (which counts
// itself in the next one).
func commandStats(t *testing.T, n *redlocktest.Node) map[string]int64 {
	t.Helper()
	calls := map[string]int64{}
	for line := range strings.Lines(do(t, n, "INFO", "commandstats")) {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":calls=")
		if ok {
			v, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
			calls[name] = v
		}
	}
	return calls
}
