// Package redlocktest starts real redis-server processes on loopback ports,
// for the tests of programs that take locks with package redlock, and for
// the demos, benchmarks and fault injection of this repository. It needs
// nothing beyond the standard library and a redis-server binary.
//
// A Cluster is N independent Redis nodes (not Redis Cluster mode), which is
// what the Redlock algorithm talks to. Each node listens on 127.0.0.1 only,
// on a free port, lives in its own directory (<dir>/node-<i>) with a
// generated redis.conf, redis.log and redis.out (stdout and stderr), and can
// be killed (SIGKILL), stopped (SIGTERM), started again on the same port,
// paused (SIGSTOP) and resumed (SIGCONT). In a test:
//
//	func TestJob_runsOnce(t *testing.T) {
//		nodes := redlocktest.Start(t, redlocktest.Options{Nodes: 3}) // closed when the test ends
//		client, err := goredis.Dial(t.Context(), nodes.URLs(), nil)
//		...
//		if err := nodes.Node(0).Kill(); err != nil { // a minority fails: locks still work
//			t.Fatal(err)
//		}
//	}
//
// New and Close do the same outside a test. Node.Do sends one command over
// a connection of its own, for setting up or checking a node's state.
//
// By default nodes have no persistence at all, so a node that is killed or
// stopped and started again comes back empty, which is the crash-recovery
// case the Redlock safety argument has to cope with. With
// Options.AppendFsyncAlways every write is in the AOF before it is
// acknowledged, so it survives kill -9.
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
// apt-get install -y redis-server). Start fails the test, never skips it,
// when redis-server is missing.
package redlocktest
