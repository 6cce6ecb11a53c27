// Package redlocktest starts real redis-server processes on loopback ports,
// for the tests of programs that take locks with package redlock, and for
// the demos, benchmarks and fault injection of this repository. It needs
// nothing beyond the standard library and a redis-server binary.
//
// A Cluster is N independent Redis nodes, which is what the Redlock
// algorithm talks to, or, with Options.RedisCluster, one Redis Cluster (see
// below), which a Redlock client can use as one of its nodes. Each node listens on 127.0.0.1 only,
// on a free port, lives in its own directory (<dir>/node-<i>) with a
// generated redis.conf, redis.log and redis.out (stdout and stderr), and can
// be killed (SIGKILL), stopped (SIGTERM), started again on the same port,
// paused (SIGSTOP) and resumed (SIGCONT). A node's ports stay its own while
// it is down: each port picked is claimed by a locked file of
// $TMPDIR/redlocktest-ports until Close (or the process's end), and no
// other Cluster, in this test process or in another run at the same time,
// takes a claimed port. In a test (Example runs the same with New and
// Close):
//
//	func TestJob_runsOnce(t *testing.T) {
//		nodes := redlocktest.Start(t, redlocktest.Options{Nodes: 3}) // closed when the test ends
//		client, err := goredis.Dial(t.Context(), nodes.URLs(), nil)
//		if err != nil {
//			t.Fatal(err)
//		}
//		defer client.Close()
//		lock, err := client.TryAcquire(t.Context(), "job")
//		...
//		if err := nodes.Node(0).Kill(); err != nil { // a minority fails: locks still work
//			t.Fatal(err)
//		}
//	}
//
// New and Close do the same outside a test. Node.Do sends one command over
// a connection of its own, for setting up or checking a node's state.
//
// The nodes New starts are ready to vote: it marks each one as
// redlock.Client.MarkReady does for a brand-new deployment, so the first
// lock taken over them is granted. Package redlock's restart quarantine
// otherwise keeps a node it has never seen from voting for its recovery
// delay (30 s by default). A test of the quarantine sets Options.Unmarked
// to start them as a new deployment's. A node started again (Node.Start,
// Node.Restart) is never marked: it sits out its quarantine, as a
// restarted node of a deployment does.
//
// go-redis logs a line for each failed dial to a node, which a test that
// kills nodes expects: goredis.SetLogger(nil), in TestMain say, drops them.
//
// By default nodes have no persistence at all, so a node that is killed or
// stopped and started again comes back empty, which is the crash-recovery
// case the Redlock safety argument has to cope with. With
// Options.AppendFsyncAlways every write is in the AOF before it is
// acknowledged, so it survives kill -9.
//
// # TLS
//
// With Options.TLS each node also listens for TLS, on a port of its own,
// with the certificate and key files given, and asks clients for a
// certificate when TLS.AuthClients is set, as redis-server does by
// default. Node.TLSURL and Cluster.TLSURLs are the rediss:// URLs of
// those ports; the adapters take the client's files as URL parameters:
//
//	c := redlocktest.Start(t, redlocktest.Options{Nodes: 3, TLS: &redlocktest.TLS{
//		CertFile: "server.pem", KeyFile: "server-key.pem", CAFile: "ca.pem", AuthClients: true}})
//	client, err := goredis.Dial(t.Context(), []string{
//		c.Node(0).TLSURL() + "?tls_ca=ca.pem&tls_cert=client.pem&tls_key=client-key.pem", ...}, nil)
//
// Node.Do and the start-up checks keep to the plaintext port.
//
// # Redis Cluster
//
// With Options.RedisCluster the nodes (3 unless Options.Nodes says
// otherwise) are started with cluster-enabled yes, a nodes.conf in their
// directory, cluster-node-timeout 1000 (a Config line can change it) and
// the cluster bus on a second free loopback port. Each node is a master
// with an even, consecutive share of the 16384 hash slots, and New returns
// once every node reports cluster_state:ok and sees every other node serve
// its slots. Addrs and URLs are the seed addresses; Node.Slots,
// Cluster.NodeForSlot and Cluster.NodeForKey tell which master was given a
// slot or key when the cluster formed, and KeySlot computes a key's slot:
//
//	c := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
//	owner := c.NodeForKey("orders:{42}") // the master serving the key's slot
//	if err := owner.Kill(); err != nil { // cluster_state:fail after about 1.5s
//		t.Fatal(err)
//	}
//	if err := owner.Restart(t.Context()); err != nil { // rejoins with its slots, empty
//		t.Fatal(err)
//	}
//	if err := c.WaitRedisCluster(t.Context()); err != nil { // about 2s after a restart
//		t.Fatal(err)
//	}
//
// Options.ClusterReplicas gives each master that many replicas, which
// join with CLUSTER MEET and CLUSTER REPLICATE; New then also waits until
// every replica's link to its master is up. The masters are nodes 0 to
// Nodes-1, the replicas follow. Redis Cluster fails over by itself: about
// 2 to 3 seconds after a master is killed, one of its replicas is
// promoted and serves its slots. Cluster.WaitPromoted waits for that,
// Cluster.MasterOf and Cluster.ReplicasOf tell who serves a slot and who
// replicates a master now (Node.ID is a node's cluster ID), and
// Cluster.Failover makes a replica take over with CLUSTER FAILOVER, the
// coordinated manual failover that loses no acknowledged write:
//
//	c := redlocktest.Start(t, redlocktest.Options{RedisCluster: true, ClusterReplicas: 1})
//	slot := redlocktest.KeySlot("orders:{42}")
//	master := c.NodeForSlot(slot)
//	if err := master.Kill(); err != nil {
//		t.Fatal(err)
//	}
//	promoted, err := c.WaitPromoted(t.Context(), slot, master) // its replica, now a master
//	...
//	if err := master.Restart(t.Context()); err != nil { // comes back as promoted's replica
//		t.Fatal(err)
//	}
//	if err := c.Failover(t.Context(), master); err != nil { // and takes its slots back
//		t.Fatal(err)
//	}
//
// Replication is asynchronous: a write acknowledged by a master that dies
// before its replica received it is lost by the failover. Pausing a
// replica does not hold writes back, since the kernel keeps receiving
// them for the paused process; to make a replica miss writes, pause it
// and close its link on the master (CLIENT KILL TYPE replica) before
// writing.
//
// Kill, Stop, Start, Restart, Pause and Resume work as for independent
// nodes. A restarted node keeps its nodes.conf, so it rejoins with its
// slots, or, if a replica took them over meanwhile, as a replica of the
// one that did; without persistence it comes back without its keys. A
// restarted master waits 2s before it serves again (Redis's own delay), and the
// others forgive a failed master after twice the node timeout; Start,
// Restart and Resume do not wait for that, WaitRedisCluster does. New
// always forms a new cluster: a nodes.conf left in an Options.Dir from an
// earlier run is removed, and keys loaded from there stay on their node
// when its share of the slots is the same (same Options.Nodes); replicas
// start empty.
//
// # Sentinel
//
// StartSentinel (NewSentinel outside a test) starts a redis-sentinel
// process that monitors masters given by name and port, with a quorum of
// one and a down-after of 500 ms unless SentinelOptions says otherwise,
// so that it fails a killed master over to its replica within a second
// or two. Sentinel.URL is the node URL of a monitored master that the
// goredis and rueidis adapters take, and WaitMaster waits until the
// Sentinel gives a new address for it:
//
//	master := redlocktest.Start(t, redlocktest.Options{Nodes: 1}).Node(0)
//	replica := redlocktest.Start(t, redlocktest.Options{Nodes: 1,
//		Config: []string{"replicaof 127.0.0.1 " + strconv.Itoa(master.Port())}}).Node(0)
//	s := redlocktest.StartSentinel(t, redlocktest.SentinelOptions{Masters: map[string]int{"locks": master.Port()}})
//	client, err := goredis.Dial(t.Context(), []string{s.URL("locks")}, nil)
//	...
//	if err := master.Kill(); err != nil {
//		t.Fatal(err)
//	}
//	if err := s.WaitMaster(t.Context(), "locks", replica.Addr()); err != nil {
//		t.Fatal(err)
//	}
//
// # Versions
//
// New reads the release of its redis-server from `redis-server --version`
// (once per binary: see ServerVersion, and Cluster.Version) and writes
// each node's redis.conf for it. It supports Redis 6.2 and later; the
// tests of this repository run 7.0. Before 7.0 it leaves out
// enable-debug-command, which 6.2 does not know (its DEBUG is always on),
// and cluster-port: a Redis Cluster node's bus then listens on its port +
// 10000, and both ports are picked free. It forms a Redis Cluster with
// CLUSTER ADDSLOTS there, for want of ADDSLOTSRANGE. Every option and
// method then works as on 7.x; what the server itself lacks before 7.0
// is told by Version.Has for the features a test may need: sharded
// Pub/Sub (SSUBSCRIBE, SPUBLISH), functions (FCALL), and the error codes
// of a script's commands in the script's error (ScriptErrorCodes). Lines
// of Options.Config and SentinelOptions.Config are written as given: on
// 6.2, use names it knows (lua-time-limit, which 7.x takes too, rather
// than busy-reply-threshold). A Sentinel's configuration is the same for
// every release.
//
// Process handling: every redis-server runs in its own process group, so a
// Ctrl-C in the terminal signals only the test binary. On Linux each child
// also gets PR_SET_PDEATHSIG=SIGKILL, so it dies with the test binary even
// when Close never runs (the temporary directory is then left behind). The
// kernel ties that signal to the OS thread that started the child, not to
// the whole process. The Go runtime ends a thread only when a goroutine
// exits while locked to it with runtime.LockOSThread, so in practice this is
// harmless; a program that does that may see a node die unexpectedly. The
// package accepts this limitation rather than dedicate a locked thread to
// every cluster.
//
// The package needs a Unix system and redis-server (on Debian or Ubuntu:
// apt-get install -y redis-server), and redis-sentinel for a Sentinel.
// Start and StartSentinel fail the test, never skip it, when the binary
// is missing.
package redlocktest
