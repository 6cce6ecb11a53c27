package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredisv9 "github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/rueidis"
)

// dialer is one adapter's Dial, with the ErrInvalidURL its errors wrap.
type dialer struct {
	name          string
	dial          func(context.Context, []string, *redlock.Options) (*redlock.Client, error)
	errInvalidURL error
}

// dialers take the same node URLs, each with its client library.
var dialers = []dialer{
	{"goredis", goredis.Dial, goredis.ErrInvalidURL},
	{"rueidis", rueidis.Dial, rueidis.ErrInvalidURL},
}

// forEachDialer runs f once per dialer as a subtest.
func forEachDialer(t *testing.T, f func(t *testing.T, d dialer)) {
	for _, d := range dialers {
		t.Run(d.name, func(t *testing.T) { f(t, d) })
	}
}

func TestDial(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3, Password: "s3cret-pw"})
	urls := cluster.URLs()
	forEachDialer(t, func(t *testing.T, d dialer) {
		client, err := d.dial(bg, urls, fast())
		if err != nil {
			t.Fatalf("Dial: %v", err)
		}
		defer client.Close()
		if err := client.MarkReady(bg, false); err != nil { // a new deployment
			t.Fatal(err)
		}
		t.Run("acquires", func(t *testing.T) {
			lock, err := client.TryAcquire(bg, "dialed")
			if err != nil {
				t.Fatalf("acquire through Dial: %v", err)
			}
			lock.Release(bg)
		})
		t.Run("oneNodeDown", func(t *testing.T) { dialOneNodeDown(t, d, urls) })
		t.Run("invalidURLs", func(t *testing.T) { dialInvalidURLs(t, d, urls) })
		t.Run("clusterURLToAServer", func(t *testing.T) { dialClusterURLToAServer(t, d, urls) })
	})
}

// dialOneNodeDown dials the first two nodes at urls and a third that does
// not answer: Dial succeeds, and so does an acquisition.
func dialOneNodeDown(t *testing.T, d dialer, urls []string) {
	down := []string{urls[0], urls[1], "redis://:s3cret-pw@127.0.0.1:1"}
	client, err := d.dial(bg, down, fast())
	if err != nil {
		t.Fatalf("Dial with one node down: %v", err)
	}
	defer client.Close()
	lock, err := client.TryAcquire(bg, "one-down")
	if err != nil {
		t.Fatalf("acquire with one node down: %v", err)
	}
	lock.Release(bg)
}

// dialInvalidURLs dials malformed URLs, a node twice, and no node: each is
// refused, and no error shows a password.
func dialInvalidURLs(t *testing.T, d dialer, urls []string) {
	for _, bad := range []string{"http://127.0.0.1:6379", "redis://", "redis://:pw@host:port%zz", "redis://127.0.0.1:6379/notadb", "::::",
		"redis://127.0.0.1:99999", "redis://127.0.0.1:0", "redis://h:6379?cluster=1&addr=h:70000", "127.0.0.1:6379", ":pw@127.0.0.1:6379",
		"redis://:6379", "redis://127.0.0.1:6379/-1", "unix:///tmp/redis.sock?db=-1", "redis://127.0.0.1:6379#primary"} {
		_, err := d.dial(bg, []string{bad}, nil)
		if !errors.Is(err, d.errInvalidURL) {
			t.Errorf("Dial(%q): %v, want ErrInvalidURL", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), ":pw@") {
			t.Errorf("Dial(%q) error shows the password: %v", bad, err)
		}
	}
	if _, err := d.dial(bg, []string{urls[0], urls[0]}, nil); !errors.Is(err, redlock.ErrDuplicateNode) {
		t.Errorf("duplicate URL: %v", err)
	}
	if _, err := d.dial(bg, nil, nil); !errors.Is(err, redlock.ErrInvalidOptions) {
		t.Errorf("no URLs: %v", err)
	}
	// strings.Split of an unset variable: one empty URL, said as no URL.
	if _, err := d.dial(bg, strings.Split("", ","), nil); !errors.Is(err, d.errInvalidURL) || !strings.Contains(err.Error(), "no node URL given") {
		t.Errorf("an empty list: %v, want ErrInvalidURL saying no node URL was given", err)
	}
}

// dialClusterURLToAServer dials a Redis Cluster URL that names a server
// outside cluster mode: the node refuses as a node with bad credentials
// does, so alone it fails Dial, saying why.
func dialClusterURLToAServer(t *testing.T, d dialer, urls []string) {
	client, err := d.dial(bg, []string{urls[0] + "?cluster=1"}, nil)
	if err == nil {
		client.Close()
		t.Fatal("Dial of a cluster URL to a server outside cluster mode succeeded")
	}
	if !strings.Contains(err.Error(), "cluster support disabled") || strings.Contains(err.Error(), "s3cret-pw") {
		t.Errorf("Dial = %v, want the server's refusal, without the password", err)
	}
}

// A node that answers but refuses what its URL asks of it (no password
// where one is needed, a wrong one, a database that does not exist) fails
// Dial, be it one node of three: no retry fixes it, and it would count as
// down without a word. The error wraps ErrInvalidURL and names each such
// node with its answer, and no password.
func TestDial_refusingNodeFails(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	do(t, cluster.Node(0), "CONFIG", "SET", "requirepass", "s3cret-pw")
	do(t, cluster.Node(1), "CONFIG", "SET", "requirepass", "s3cret-pw")
	addrs := cluster.Addrs()
	good := []string{"redis://:s3cret-pw@" + addrs[0], "redis://:s3cret-pw@" + addrs[1], "redis://" + addrs[2]}
	cases := []struct {
		name    string
		bad     map[int]string // node index: its URL
		answers string         // the beginning of each bad node's answer
	}{
		{"noPassword", map[int]string{0: "redis://" + addrs[0]}, "NOAUTH"},
		{"wrongPassword", map[int]string{0: "redis://:not-it-pw@" + addrs[0]}, "WRONGPASS"},
		{"noSuchDatabase", map[int]string{2: "redis://" + addrs[2] + "/99"}, "DB index"},
		{"majority", map[int]string{0: "redis://:not-it-pw@" + addrs[0], 1: "redis://:not-it-pw@" + addrs[1]}, "WRONGPASS"},
	}
	forEachDialer(t, func(t *testing.T, d dialer) {
		for _, tc := range cases {
			urls := slices.Clone(good)
			for i, u := range tc.bad {
				urls[i] = u
			}
			t.Run(tc.name, func(t *testing.T) { dialRefusing(t, d, urls, addrs, tc.bad, tc.answers) })
		}
		client, err := d.dial(bg, good, fast())
		if err != nil {
			t.Fatalf("Dial with the right URLs: %v", err)
		}
		client.Close()
	})
}

// dialRefusing dials urls, of which the nodes bad (by index in addrs)
// refuse theirs with an answer that begins with answers: Dial fails with
// ErrInvalidURL, naming each with its answer, and no password.
func dialRefusing(t *testing.T, d dialer, urls, addrs []string, bad map[int]string, answers string) {
	client, err := d.dial(bg, urls, fast())
	if err == nil {
		client.Close()
		t.Fatalf("Dial with %d of %d nodes refusing their URLs succeeded", len(bad), len(urls))
	}
	if !errors.Is(err, d.errInvalidURL) {
		t.Errorf("Dial = %v, want ErrInvalidURL", err)
	}
	for i := range bad {
		if !strings.Contains(err.Error(), addrs[i]+": "+answers) && !strings.Contains(err.Error(), addrs[i]+": ERR "+answers) {
			t.Errorf("Dial = %v, want node %s named with its %s answer", err, addrs[i], answers)
		}
	}
	if strings.Contains(err.Error(), "not-it-pw") || strings.Contains(err.Error(), "s3cret-pw") {
		t.Errorf("error shows a password: %v", err)
	}
}

// A node whose address another kind of server answers (here HTTP) fails
// Dial as a node that refuses its URL does: it answered, in another
// protocol, and no retry makes it Redis.
func TestDial_serverThatSpeaksNoRESP(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 2})
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	other := strings.TrimPrefix(web.URL, "http://")
	urls := append(cluster.URLs(), "redis://"+other)
	forEachDialer(t, func(t *testing.T, d dialer) {
		client, err := d.dial(bg, urls, fast())
		if err == nil {
			client.Close()
			t.Fatal("Dial with an HTTP server as a node succeeded")
		}
		if !errors.Is(err, d.errInvalidURL) || !strings.Contains(err.Error(), other+": not a Redis server") {
			t.Errorf("Dial = %v, want ErrInvalidURL naming %s as not a Redis server", err, other)
		}
	})
}

// Nodes that cannot be reached pass Dial, as Redlock works while a majority
// answers, and the Client lists them with the error of their PING: a node
// that refuses connections as an error, one that accepts them but never
// answers as a timeout. A Client whose nodes all answered lists none, and
// so does one from New, which does no I/O.
func TestDial_unreachableNodesAreReported(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 4})
	if err := cluster.Node(2).Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Node(3).Pause(); err != nil {
		t.Fatal(err)
	}
	defer cluster.Node(3).Resume()
	urls := cluster.URLs()
	forEachDialer(t, func(t *testing.T, d dialer) {
		client, err := d.dial(bg, urls, fast())
		if err != nil {
			t.Fatalf("Dial with two nodes of four unreachable: %v", err)
		}
		defer client.Close()
		down := client.UnreachableAtDial()
		if len(down) != 2 {
			t.Fatalf("UnreachableAtDial = %v, want nodes 2 and 3", down)
		}
		if r := down[0]; r.Node != cluster.Node(2).Addr() || r.Outcome != redlock.OutcomeError || r.Err == nil || !strings.Contains(r.Err.Error(), "connection refused") {
			t.Errorf("killed node: %+v, want %s with a connection refused", r, cluster.Node(2).Addr())
		}
		if r := down[1]; r.Node != cluster.Node(3).Addr() || r.Outcome != redlock.OutcomeTimeout || r.Err == nil {
			t.Errorf("paused node: %+v, want %s timing out", r, cluster.Node(3).Addr())
		}

		up, err := d.dial(bg, urls[:2], fast())
		if err != nil {
			t.Fatal(err)
		}
		defer up.Close()
		if down := up.UnreachableAtDial(); down != nil {
			t.Errorf("every node answered, UnreachableAtDial = %v", down)
		}
	})
	c, err := redlock.New(goredisConns(t, cluster.Addrs()), fast())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if down := c.UnreachableAtDial(); down != nil {
		t.Errorf("a Client from New: UnreachableAtDial = %v", down)
	}
}

// A node that pauses writes (CLIENT PAUSE … WRITE, as an old master does
// during a failover) answers PING, and Dial's checks of what it refuses
// (PUBLISH, EVALSHA), which the pause holds back, wait for it no longer
// than the grace: a node refuses such a command before the pause would
// hold it. Before, each waited out the client library's read timeout (a
// second over go-redis) or the check's bound (3 s over rueidis). Dial's
// time with the pause is compared with its time without, so that a slow
// machine slows both.
func TestDial_nodePausingWritesIsNotWaitedFor(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	paused := cluster.Node(2)
	forEachDialer(t, func(t *testing.T, d dialer) {
		timed := func() time.Duration {
			start := time.Now()
			client, err := d.dial(bg, cluster.URLs(), fast())
			took := time.Since(start)
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			client.Close()
			return took
		}
		alone := timed()
		do(t, paused, "CLIENT", "PAUSE", "60000", "WRITE")
		defer paused.Do(bg, "CLIENT", "UNPAUSE")
		if took := timed(); took > alone+time.Second {
			t.Errorf("Dial took %s with a node pausing writes, %s without: held back by the pause", took, alone)
		}
	})
}

// A node that does not answer while a majority does is not waited for
// past the check's grace, however long the client library's own read
// timeout: Dial lists it as timing out, says why, and the node votes once
// it answers. Before, a paused node of three held Dial, and every redlock
// command, for the client library's read timeout (a second over go-redis).
func TestDial_silentMinorityIsNotWaitedFor(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	silent := cluster.Node(2)
	forEachDialer(t, func(t *testing.T, d dialer) {
		if err := silent.Pause(); err != nil {
			t.Fatal(err)
		}
		client, err := d.dial(bg, cluster.URLs(), fast())
		if err != nil {
			silent.Resume()
			t.Fatalf("Dial with one node of three paused: %v", err)
		}
		defer client.Close()
		down := client.UnreachableAtDial()
		if len(down) != 1 || down[0].Node != silent.Addr() || down[0].Outcome != redlock.OutcomeTimeout ||
			!strings.Contains(down[0].Err.Error(), "a majority of the nodes answered") {
			t.Errorf("UnreachableAtDial = %+v, want %s timing out once a majority answered", down, silent.Addr())
		}
		if _, err := client.List(bg, ""); !errors.Is(err, redlock.ErrListIncomplete) || !strings.Contains(err.Error(), "not counted yet") {
			t.Errorf("List with a node out since Dial: %v, want ErrListIncomplete saying the node is not counted yet", err)
		}
		if err := silent.Resume(); err != nil {
			t.Fatal(err)
		}
		// Once it answers, it votes: a lock reaches it too.
		key := "after-" + d.name
		eventually(t, "a lock reaches the resumed node", func() bool {
			l, err := client.TryAcquire(bg, key)
			if err != nil {
				return false
			}
			defer l.Release(bg)
			for range 20 {
				if keyOn(t, silent, key) == l.Token() {
					return true
				}
				time.Sleep(10 * time.Millisecond)
			}
			return false
		})
	})
}

// One server listed under two names (localhost and 127.0.0.1) fails Dial
// with ErrDuplicateNode naming both entries: its two votes would break the
// quorum's independence.
func TestDial_oneServerUnderTwoNames(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 2})
	port := strconv.Itoa(cluster.Node(0).Port())
	urls := []string{"redis://localhost:" + port, "redis://127.0.0.1:" + port, cluster.Node(1).URL()}
	forEachDialer(t, func(t *testing.T, d dialer) {
		client, err := d.dial(bg, urls, nil)
		if err == nil {
			client.Close()
			t.Fatal("Dial of one server under two names succeeded")
		}
		if !errors.Is(err, redlock.ErrDuplicateNode) || !strings.Contains(err.Error(), "localhost:"+port) || !strings.Contains(err.Error(), "127.0.0.1:"+port) {
			t.Errorf("Dial = %v, want ErrDuplicateNode naming both entries", err)
		}
	})
}

// One server listed under two names fails Dial even when it does not
// answer then (paused, slow to start): the entries name one address once
// resolved. Before, Dial passed it as unreachable, and once it answered
// it counted as two votes: with the only other node down, a lock was
// granted by that one server.
func TestDial_unreachableServerUnderTwoNames(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 2})
	if err := cluster.Node(0).Pause(); err != nil {
		t.Fatal(err)
	}
	defer cluster.Node(0).Resume()
	port := strconv.Itoa(cluster.Node(0).Port())
	for _, urls := range [][]string{
		{"redis://localhost:" + port, "redis://127.0.0.1:" + port + "/1", cluster.Node(1).URL()},
		{"redis://127.0.0.1:" + port, cluster.Node(1).URL(), "redis://127.0.0.1:" + port + "?client_name=other"},
	} {
		forEachDialer(t, func(t *testing.T, d dialer) {
			client, err := d.dial(bg, urls, fast())
			if err == nil {
				client.Close()
				t.Fatalf("Dial of one unreachable server under two names succeeded: %q", urls)
			}
			if !errors.Is(err, redlock.ErrDuplicateNode) || !strings.Contains(err.Error(), "127.0.0.1:"+port) {
				t.Errorf("Dial(%q) = %v, want ErrDuplicateNode naming the address", urls, err)
			}
		})
	}
}

// Dial with a context that has ended fails with its error: no node could
// be checked, and a Client whose every node went unchecked would look
// like one whose nodes are all down.
func TestDial_endedContext(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	ctx, cancel := context.WithCancel(bg)
	cancel()
	forEachDialer(t, func(t *testing.T, d dialer) {
		client, err := d.dial(ctx, cluster.URLs(), nil)
		if err == nil {
			client.Close()
			t.Fatal("Dial with a cancelled context succeeded")
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Dial with a cancelled context: %v, want context.Canceled", err)
		}
	})
}

// A master_name URL whose address is a plain server, not a Sentinel,
// fails Dial with ErrInvalidURL: the server answers, and refuses the
// SENTINEL command, which no retry changes. Before, go-redis's words for
// it ("all sentinels ... are unreachable") passed it as a node down.
func TestDial_sentinelURLToAPlainServer(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	url := cluster.Node(0).URL() + "?master_name=mymaster"
	forEachDialer(t, func(t *testing.T, d dialer) {
		client, err := d.dial(bg, []string{url}, fast())
		if err == nil {
			client.Close()
			t.Fatal("Dial of a master_name URL to a plain server succeeded")
		}
		if !errors.Is(err, d.errInvalidURL) {
			t.Errorf("Dial = %v, want ErrInvalidURL", err)
		}
	})
}

// A replica, or a Sentinel, named as a node fails Dial with ErrInvalidURL,
// however few such nodes there are: a replica refuses the locks' writes
// (and would vote with its master's data), a Sentinel holds none, and a
// majority of masters granting without them would hide that the list has
// fewer independent nodes than it seems.
func TestDial_replicaOrSentinelAsNodeFails(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	master := strconv.Itoa(cluster.Node(0).Port())
	do(t, cluster.Node(2), "REPLICAOF", "127.0.0.1", master)
	sentinel := redlocktest.StartSentinel(t, redlocktest.SentinelOptions{Masters: map[string]int{"locks": cluster.Node(0).Port()}})
	for name, tc := range map[string]struct {
		urls []string
		want string
	}{
		"replica":  {cluster.URLs(), cluster.Node(2).Addr() + ": a replica of 127.0.0.1:" + master},
		"sentinel": {[]string{cluster.Node(0).URL(), cluster.Node(1).URL(), "redis://" + sentinel.Addr()}, sentinel.Addr() + ": a Sentinel"},
	} {
		forEachDialer(t, func(t *testing.T, d dialer) {
			client, err := d.dial(bg, tc.urls, fast())
			if err == nil {
				client.Close()
				t.Fatalf("Dial with a %s in the node list succeeded", name)
			}
			if !errors.Is(err, d.errInvalidURL) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Dial = %v, want ErrInvalidURL with %q", err, tc.want)
			}
		})
	}
}

// A rediss:// URL of a Sentinel-managed master or of a Redis Cluster whose
// sentinels or seeds answer in plaintext fails Dial with the reason too,
// rather than dialing, as for a node that is down, and timing out on
// every request.
func TestDial_tlsToPlaintextSentinelOrCluster(t *testing.T) {
	master := redlocktest.Start(t, redlocktest.Options{Nodes: 1}).Node(0)
	sentinel := redlocktest.StartSentinel(t, redlocktest.SentinelOptions{Masters: map[string]int{"locks": master.Port()}})
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	for name, url := range map[string]string{
		"sentinel": "rediss://" + sentinel.Addr() + "?master_name=locks",
		"cluster":  "rediss://" + cluster.Node(0).Addr() + "?cluster=1",
	} {
		t.Run(name, func(t *testing.T) {
			forEachDialer(t, func(t *testing.T, d dialer) {
				client, err := d.dial(bg, []string{url}, nil)
				if err == nil {
					client.Close()
					t.Fatalf("Dial of %s succeeded", url)
				}
				if !errors.Is(err, d.errInvalidURL) || !strings.Contains(err.Error(), "plaintext") {
					t.Errorf("Dial = %v, want ErrInvalidURL saying the server answers in plaintext", err)
				}
			})
		})
	}
}

// A rediss:// URL to a plaintext port fails Dial with the reason, instead
// of dialing "successfully" and timing out on every request, and without
// waiting out the first PING's 3 s: the port answers the probe at once.
func TestDial_tlsToAPlaintextPort(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	forEachDialer(t, func(t *testing.T, d dialer) {
		start := time.Now()
		client, err := d.dial(bg, []string{"rediss://" + cluster.Node(0).Addr()}, nil)
		took := time.Since(start)
		if err == nil {
			client.Close()
			t.Fatal("Dial of rediss:// to a plaintext port succeeded")
		}
		if !errors.Is(err, d.errInvalidURL) || !strings.Contains(err.Error(), "plaintext") {
			t.Errorf("Dial = %v, want ErrInvalidURL saying the server answers in plaintext", err)
		}
		if took >= 2500*time.Millisecond {
			t.Errorf("Dial took %v to fail, want it to end with the probe, not with the first PING's 3 s", took)
		}
		// The same node over redis:// dials.
		client, err = d.dial(bg, []string{"redis://" + cluster.Node(0).Addr()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		client.Close()
	})
}

// A Redis Cluster given as one node URL, by a seed and an addr parameter,
// locks with either adapter.
func TestDial_redisClusterURL(t *testing.T) {
	t.Parallel()
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	url := cluster.URLs()[0] + "?cluster=1&addr=" + cluster.Addrs()[1]
	forEachDialer(t, func(t *testing.T, d dialer) {
		client, err := d.dial(bg, []string{url}, &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 500 * time.Millisecond})
		if err != nil {
			t.Fatalf("Dial: %v", err)
		}
		defer client.Close()
		for _, key := range []string{"job", "user:{42}:cart"} {
			lockOnCluster(t, client, key)
		}
	})
}

// A Redis Cluster that is down at Dial counts as a node down: Dial
// succeeds, the other nodes lock, and the cluster answers once it is back.
func TestDial_redisClusterDownAtDial(t *testing.T) {
	servers := redlocktest.Start(t, redlocktest.Options{Nodes: 2})
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	urls := append(servers.URLs(), cluster.URLs()[0]+"?cluster=1&addr="+cluster.Addrs()[1])
	for _, n := range cluster.Nodes() {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	// No quarantine: marking 16384 slots ready costs seconds, and this
	// test is about reaching the cluster.
	opts := &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 500 * time.Millisecond, DisableQuarantine: true}
	clients := make([]*redlock.Client, len(dialers))
	for i, d := range dialers {
		c, err := d.dial(bg, urls, opts)
		if err != nil {
			t.Fatalf("%s: Dial with the cluster down: %v", d.name, err)
		}
		defer c.Close()
		clients[i] = c
		lock, err := c.TryAcquire(bg, "job")
		if err != nil {
			t.Fatalf("%s: acquire with the cluster down: %v", d.name, err)
		}
		if o := lock.Nodes()[2].Outcome; o == redlock.OutcomeOK {
			t.Errorf("%s: the cluster that is down reported %v", d.name, o)
		}
		lock.Release(bg)
	}
	for _, n := range cluster.Nodes() {
		if err := n.Start(bg); err != nil {
			t.Fatal(err)
		}
	}
	if err := cluster.WaitRedisCluster(bg); err != nil {
		t.Fatal(err)
	}
	for i, c := range clients {
		waitAnswers(t, c, 2, dialers[i].name)
	}
}

// waitAnswers waits until node i of c answers Inspect.
func waitAnswers(t *testing.T, c *redlock.Client, i int, name string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		states, err := c.Inspect(bg, "job")
		if err != nil {
			t.Fatal(err)
		}
		if states[i].Err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: node %d does not answer 20 s after it is back: %v", name, i, states[i].Err)
		}
	}
}

// records is a slog.Handler that keeps each record's message and
// attributes, for tests to read. It is safe for concurrent use.
type records struct {
	mu   sync.Mutex
	list []map[string]string
}

// Enabled reports that every level is kept.
func (r *records) Enabled(context.Context, slog.Level) bool { return true }

// Handle keeps rec.
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	m := map[string]string{"level": rec.Level.String(), "msg": rec.Message}
	rec.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.String()
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, m)
	return nil
}

// WithAttrs returns r: the tests log no attributes ahead.
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }

// WithGroup returns r: the tests log no groups.
func (r *records) WithGroup(string) slog.Handler { return r }

// warnings returns the records at Warn level.
func (r *records) warnings() []map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var w []map[string]string
	for _, m := range r.list {
		if m["level"] == slog.LevelWarn.String() {
			w = append(w, m)
		}
	}
	return w
}

// text returns every record, printed.
func (r *records) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, m := range r.list {
		for k, v := range m {
			b.WriteString(k + "=" + v + " ")
		}
	}
	return b.String()
}

// dialLog counts go-redis's log lines about one address.
type dialLog struct {
	addr  string
	lines atomic.Int64
}

func (l *dialLog) Printf(_ context.Context, format string, v ...any) {
	if strings.Contains(fmt.Sprintf(format, v...), l.addr) {
		l.lines.Add(1)
	}
}

// A node that is down costs go-redis's global log a bounded number of
// lines, whatever the cores and however long the client keeps trying: the
// pool of a node a URL names (8 connections) stops dialing after 8
// failures in a row, and then probes it in silence. Dials that were under
// way at the eighth failure log too, and up to 8 run at once: at most 15.
func TestDial_downNodeLogsFewLines(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	down := cluster.Node(2)
	if err := down.Kill(); err != nil {
		t.Fatal(err)
	}
	log := &dialLog{addr: down.Addr()}
	goredisv9.SetLogger(log)
	defer goredis.SetLogger(nil)
	client, err := goredis.Dial(bg, cluster.URLs(), fast())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(bg, 2*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if lock, err := client.TryAcquire(ctx, "busy"); err == nil {
			lock.Release(bg)
		}
	}
	if n := log.lines.Load(); n > 2*8-1 {
		t.Errorf("%d log lines about the down node in 2 s of locking", n)
	}
}
