package redlock_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/rueidis"
)

// A user that has every channel but may not run PUBLISH is refused by
// Dial with the command to grant, not the channels: before, the advice
// named the channels the user already had.
func TestACL_userWithoutPublish(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	n := cluster.Node(0)
	do(t, n, "ACL", "SETUSER", "nopub", "on", ">pw", "~*", "&*", "+@all", "-publish")
	forEachDialer(t, func(t *testing.T, d dialer) {
		c, err := d.dial(bg, []string{"redis://nopub:pw@" + n.Addr()}, fast())
		if err == nil {
			c.Close()
			t.Fatal("Dial took a node that refuses the user PUBLISH")
		}
		if !errors.Is(err, d.errInvalidURL) || !strings.Contains(err.Error(), "+publish") || strings.Contains(err.Error(), "allchannels") {
			t.Errorf("Dial: %v, want %v saying to grant +publish", err, d.errInvalidURL)
		}
	})
}

// A Redis 7 ACL user made with ~* +@all gets no pub/sub channel
// (acl-pubsub-default resetchannels): it may take and release locks, but
// not announce releases to waiters. Dial refuses such a node as it
// refuses a wrong password, and a Client made without Dial still
// releases for real and says so when a waiter was to be told: the
// announcement refused does not undo or fail the release.
func TestACL_userWithoutTheReleaseChannels(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	for _, n := range cluster.Nodes() {
		do(t, n, "ACL", "SETUSER", "locker", "on", ">pw", "~*", "+@all", "resetchannels")
	}
	var urls []string
	for _, addr := range cluster.Addrs() {
		urls = append(urls, "redis://locker:pw@"+addr)
	}
	forEachDialer(t, func(t *testing.T, d dialer) {
		c, err := d.dial(bg, urls, fast())
		if err == nil {
			c.Close()
			t.Fatal("Dial took nodes that refuse the user the release channels")
		}
		if !errors.Is(err, d.errInvalidURL) || !strings.Contains(err.Error(), "channels") {
			t.Errorf("Dial: %v, want %v saying the channels are refused", err, d.errInvalidURL)
		}
	})
	forEachAdapter(t, func(t *testing.T, a adapter) {
		holder := newClient(t, cluster, a, fast())
		c := urlClient(t, a, urls)
		lock, err := c.TryAcquire(bg, "acl-job")
		if err != nil {
			t.Fatal(err)
		}
		// A waiter, so that the release announces.
		ctx, cancel := context.WithTimeout(bg, 10*time.Second)
		defer cancel()
		waited := make(chan error, 1)
		go func() {
			l, err := holder.Acquire(ctx, "acl-job")
			if err == nil {
				err = l.Release(bg)
			}
			waited <- err
		}()
		// Queued where the lock refused it: a quorum granted the lock,
		// not necessarily every node.
		eventually(t, "the waiter queued", func() bool {
			return slices.ContainsFunc(cluster.Nodes(), func(n *redlocktest.Node) bool { return waitingOn(t, n, "acl-job") })
		})
		if err := lock.Release(bg); err != nil {
			t.Errorf("release with a waiter, by a user without the channels: %v", err)
		}
		if err := <-waited; err != nil {
			t.Errorf("the waiter: %v", err)
		}
	})
}

// urlClient returns a Client made by New over conns to urls, closed when
// the test ends: no check of the nodes, as Dial makes.
func urlClient(t *testing.T, a adapter, urls []string) *redlock.Client {
	var conns []redlock.Conn
	for _, u := range urls {
		conns = append(conns, urlConn(t, a, u))
	}
	c, err := redlock.New(conns, fast())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// urlConn returns a Conn of adapter a for a node URL.
func urlConn(t testing.TB, a adapter, url string) redlock.Conn {
	t.Helper()
	var conn redlock.Conn
	var err error
	switch a.name {
	case "goredis":
		conn, err = goredis.NewURL(url)
	default:
		conn, err = rueidis.NewURL(url)
	}
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// waitingOn reports whether a client waits in the queue of key on n.
func waitingOn(t testing.TB, n *redlocktest.Node, key string) bool {
	queue, _ := redlock.QueueKeys(key)
	v, err := n.Do(bg, "ZCARD", queue)
	if err != nil {
		t.Fatal(err)
	}
	return v != "0"
}

// A user that may run no script (neither EVALSHA nor FCALL) could take no
// lock on the node: Dial refuses the node as it refuses a wrong password,
// rather than count it among the nodes and fail every request there. A
// user that may run functions only still passes: the library runs its
// scripts as functions.
func TestACL_userWithoutScripts(t *testing.T) {
	needs(t, redlocktest.Functions) // a user of functions only
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	for _, n := range cluster.Nodes() {
		do(t, n, "ACL", "SETUSER", "noscripts", "on", ">pw", "~*", "&*", "+@all", "-@scripting")
		do(t, n, "ACL", "SETUSER", "functions", "on", ">pw", "~*", "&*", "+@all", "-evalsha", "-eval")
	}
	urls := func(user string) []string {
		var out []string
		for _, addr := range cluster.Addrs() {
			out = append(out, "redis://"+user+":pw@"+addr)
		}
		return out
	}
	forEachDialer(t, func(t *testing.T, d dialer) {
		c, err := d.dial(bg, urls("noscripts"), fast())
		if err == nil {
			c.Close()
			t.Fatal("Dial took nodes that refuse the user every script")
		}
		if !errors.Is(err, d.errInvalidURL) || !strings.Contains(err.Error(), "may run none of the scripts") {
			t.Errorf("Dial: %v, want %v saying the scripts are refused", err, d.errInvalidURL)
		}
		c, err = d.dial(bg, urls("functions"), fast())
		if err != nil {
			t.Fatalf("Dial with a user that may run functions: %v", err)
		}
		defer c.Close()
		lock, err := c.TryAcquire(bg, "functions-only")
		if err != nil {
			t.Fatalf("TryAcquire by functions: %v", err)
		}
		if err := lock.Release(bg); err != nil {
			t.Fatal(err)
		}
	})
}

// A server with PUBLISH renamed away cannot wake waiters: Dial refuses it
// as it refuses a user without +publish. Before, it passed, and waiters
// slowed to their retry delays without a word.
func TestDial_publishRenamedAway(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1, Config: []string{`rename-command PUBLISH ""`}})
	forEachDialer(t, func(t *testing.T, d dialer) {
		wantDialRefused(t, d, cluster.URLs(), "a node with PUBLISH renamed away", "rename-command")
	})
}

// urlsAs returns the URLs of cluster's nodes for user, password "pw".
func urlsAs(cluster *redlocktest.Cluster, user string) []string {
	var urls []string
	for _, addr := range cluster.Addrs() {
		urls = append(urls, "redis://"+user+":pw@"+addr)
	}
	return urls
}

// wantDialRefused fails the test unless d's Dial of urls, what they are,
// fails with ErrInvalidURL saying want.
func wantDialRefused(t *testing.T, d dialer, urls []string, what, want string) {
	t.Helper()
	c, err := d.dial(bg, urls, fast())
	if err == nil {
		c.Close()
		t.Errorf("Dial took %s", what)
		return
	}
	if !errors.Is(err, d.errInvalidURL) || !strings.Contains(err.Error(), want) {
		t.Errorf("Dial of %s: %v, want %v saying %q", what, err, d.errInvalidURL, want)
	}
}

// A user that may not run a command the scripts run is refused by Dial,
// naming the command: without DEL, ZREM, HDEL or ZSCORE a lock was granted
// and its release refused, which left it locked for its TTL, as were the
// grants of a failed attempt; without TIME every new lock failed. A server
// that does not know such a command (rename-command) is refused too.
func TestDial_userRefusedACommandOfTheScripts(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	renamed := redlocktest.Start(t, redlocktest.Options{Nodes: 1, Config: []string{`rename-command DEL ""`}})
	lacks := []string{"del", "zrem", "hdel", "zscore", "exists", "time"}
	// On Redis 6.2, which has no acl_check_cmd, Dial runs the commands
	// that change nothing instead: these are all of them.
	for _, n := range cluster.Nodes() {
		for _, cmd := range lacks {
			do(t, n, "ACL", "SETUSER", "no"+cmd, "on", ">pw", "~*", "&*", "+@all", "-"+cmd)
		}
		do(t, n, "ACL", "SETUSER", "keys", "on", ">pw", "~redlock:*", "~app:*", "&*", "+@all")
		do(t, n, "ACL", "SETUSER", "appkeys", "on", ">pw", "~app:*", "&*", "+@all")
	}
	forEachDialer(t, func(t *testing.T, d dialer) {
		for _, cmd := range lacks {
			urls := urlsAs(cluster, "no"+cmd)
			what := "nodes that refuse the user " + strings.ToUpper(cmd)
			wantDialRefused(t, d, urls, what, "may not run "+strings.ToUpper(cmd))
			wantDialRefused(t, d, urls, what, "+"+cmd)
		}
		// Key patterns: the library's keys besides the locks' are what it
		// needs. Before the check named each command's arguments, it
		// crashed a Redis 7.0 server for such a user.
		for user, refused := range map[string]bool{"keys": false, "appkeys": true} {
			c, err := d.dial(bg, urlsAs(cluster, user), fast())
			switch {
			case !refused && err != nil:
				t.Errorf("Dial of a user with the library's keys: %v", err)
			case refused && (!errors.Is(err, d.errInvalidURL) || !strings.Contains(err.Error(), "~redlock:*")):
				t.Errorf("Dial of a user without the library's keys: %v, want %v naming ~redlock:*", err, d.errInvalidURL)
			}
			if err == nil {
				c.Close()
			}
			for _, n := range cluster.Nodes() {
				if _, err := n.Do(bg, "PING"); err != nil {
					t.Fatalf("node %d after Dial of user %s: %v", n.Index(), user, err)
				}
			}
		}
		wantDialRefused(t, d, renamed.URLs(), "a node with DEL renamed away", "knows no DEL")
	})
}

// A user refused PING, which the clients check a node with, is refused by
// Dial with what to grant.
func TestDial_userRefusedPingIsToldWhatToGrant(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	do(t, cluster.Node(0), "ACL", "SETUSER", "noping", "on", ">pw", "~*", "&*", "+@all", "-ping")
	forEachDialer(t, func(t *testing.T, d dialer) {
		wantDialRefused(t, d, urlsAs(cluster, "noping"), "a node that refuses the user PING", "+ping")
	})
}

// The ACL user the README gives passes Dial, and locks, waits, lists and
// releases.
func TestACL_theREADMEsUser(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	var urls []string
	for _, n := range cluster.Nodes() {
		do(t, n, "ACL", "SETUSER", "locker", "on", ">pw", "~redlock:*", "~jobs:*", "&redlock:released:*",
			"+@read", "+@write", "+@scripting", "+@pubsub", "+@connection", "+info", "+time")
		urls = append(urls, "redis://locker:pw@"+n.Addr())
	}
	forEachDialer(t, func(t *testing.T, d dialer) {
		c, err := d.dial(bg, urls, fast())
		if err != nil {
			t.Fatalf("Dial of the README's user: %v", err)
		}
		defer c.Close()
		if err := c.MarkReady(bg, false); err != nil {
			t.Fatal(err)
		}
		lock, err := c.Acquire(bg, "jobs:readme")
		if err != nil {
			t.Fatal(err)
		}
		waiter := acquireLater(c, "jobs:readme")
		if _, err := c.List(bg, "jobs:"); err != nil {
			t.Fatalf("List: %v", err)
		}
		if err := lock.Release(bg); err != nil {
			t.Fatal(err)
		}
		got := <-waiter
		if got == nil {
			t.Fatal("the waiter did not get the lock")
		}
		if err := got.Release(bg); err != nil {
			t.Fatal(err)
		}
	})
}
