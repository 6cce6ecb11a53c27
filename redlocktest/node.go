package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	host = "127.0.0.1"

	confName      = "redis.conf"
	logName       = "redis.log"
	outName       = "redis.out"
	nodesConfName = "nodes.conf" // a Redis Cluster node's own cluster state

	readyTimeout  = 10 * time.Second       // how long a start may take
	readyPoll     = 5 * time.Millisecond   // PING interval while starting
	pingTimeout   = 500 * time.Millisecond // one readiness probe
	rebindTimeout = 2 * time.Second        // how long a restart retries a taken port
	rebindPoll    = 50 * time.Millisecond
	portAttempts  = 5                // first-start attempts, each on a new port
	stopTimeout   = 10 * time.Second // Stop's SIGTERM grace before SIGKILL
	exitTimeout   = 10 * time.Second // how long to wait for a SIGKILLed process
)

// ErrNotRunning is returned, wrapped, by Node methods that need a running
// redis-server process when there is none.
var ErrNotRunning = errors.New("redlocktest: node not running")

// errAddrInUse marks a start that failed because the port was taken.
var errAddrInUse = errors.New("address already in use")

// Node is one redis-server process of a Cluster. It keeps its port,
// directory and configuration across restarts. Its methods are safe for
// concurrent use; lifecycle methods (Kill, Stop, Start, Restart, Pause,
// Resume) are serialized per node.
type Node struct {
	index  int
	dir    string
	server string
	conf   nodeConfig
	// port and busPort (the Redis Cluster bus, 0 outside a Redis Cluster)
	// are chosen by firstStart, and id, shard and slots are set when the
	// Redis Cluster forms, all before the Node is shared; they never change
	// afterwards (a restarted node keeps its ID in nodes.conf), so they are
	// read without the mutex.
	port    int
	busPort int
	tlsPort int         // with Options.TLS, 0 otherwise
	id      string      // Redis Cluster node ID
	shard   int         // index of the master the node was formed under (itself for a master)
	slots   []SlotRange // the slots of a master when the cluster formed; nil for a replica

	mu     sync.Mutex
	proc   *process // the last process started, nil before the first start
	paused bool
	closed bool
}

// newNode creates the node's directory; firstStart picks its port.
func newNode(index int, dir, server string, conf nodeConfig) (*Node, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("redlocktest: create node dir: %w", err)
	}
	return &Node{index: index, dir: dir, server: server, conf: conf}, nil
}

// Index returns the node's position in the cluster, from 0.
func (n *Node) Index() int { return n.index }

// Port returns the node's TCP port on 127.0.0.1.
func (n *Node) Port() int { return n.port }

// Addr returns "127.0.0.1:port".
func (n *Node) Addr() string { return net.JoinHostPort(host, strconv.Itoa(n.port)) }

// URL returns "redis://127.0.0.1:port", or "redis://:password@127.0.0.1:port"
// (password escaped) when the cluster has a password.
func (n *Node) URL() string {
	u := url.URL{Scheme: "redis", Host: n.Addr()}
	if n.conf.password != "" {
		u.User = url.UserPassword("", n.conf.password)
	}
	return u.String()
}

// Dir returns the node's directory, which holds redis.conf, redis.log,
// redis.out and any persistence files.
func (n *Node) Dir() string { return n.dir }

// PID returns the process id of the running redis-server, or 0 when the
// node is not running.
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.runningLocked() {
		return 0
	}
	return n.proc.pid()
}

// Running reports whether the node's process is alive (paused counts as
// alive). It becomes false as soon as the process exits, for whatever reason.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.runningLocked()
}

// Paused reports whether the node is running and stopped by Pause.
func (n *Node) Paused() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.paused && n.runningLocked()
}

// Kill sends SIGKILL and waits for the process to exit. Unacknowledged
// writes are lost, and without AppendFsyncAlways all data is. A paused node
// is killed at once, without running again first: the kernel delivers
// SIGKILL to stopped processes.
func (n *Node) Kill() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.killLocked()
}

// Stop sends SIGTERM, which lets redis-server shut down cleanly (and flush
// its AOF when AppendFsyncAlways is set), and waits for it to exit. A
// paused node is resumed so it can handle the signal. If it has not exited
// after 10s it is killed and Stop returns an error.
func (n *Node) Stop() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, err := n.runningProcLocked(); err != nil {
		return err
	}
	killed, err := n.terminateLocked(stopTimeout)
	if err != nil {
		return err
	}
	if killed {
		return fmt.Errorf("redlocktest: node %d (%s) ignored SIGTERM for %v and was killed", n.index, n.Addr(), stopTimeout)
	}
	return nil
}

// Start starts the node again on the same port, directory and
// configuration, and waits until it answers PING (after AUTH when there is
// a password). It fails if the node is running or its cluster is closed. If
// the port is taken, Start retries for about 2 seconds.
func (n *Node) Start(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.startLocked(ctx)
}

// Restart kills the node if it is running, then starts it as Start does.
func (n *Node) Restart(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.runningLocked() {
		if err := n.killLocked(); err != nil {
			return err
		}
	}
	return n.startLocked(ctx)
}

// Pause stops the process with SIGSTOP and, on Linux, waits until the
// kernel reports it stopped. Connections are still accepted by the kernel,
// but nothing is answered until Resume. Pausing a paused node does nothing.
func (n *Node) Pause() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	p, err := n.runningProcLocked()
	if err != nil || n.paused {
		return err
	}
	if err := p.signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("redlocktest: pause node %d: %w", n.index, err)
	}
	n.paused = true
	if err := p.waitStopped(); err != nil {
		return fmt.Errorf("redlocktest: pause node %d: %w", n.index, err)
	}
	return nil
}

// Resume continues a paused node with SIGCONT. Resuming a running node that
// is not paused does nothing; a node that is not running (killed, or
// stopped) gives ErrNotRunning.
func (n *Node) Resume() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	p, err := n.runningProcLocked()
	if err != nil || !n.paused {
		return err
	}
	if err := p.signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("redlocktest: resume node %d: %w", n.index, err)
	}
	n.paused = false
	return nil
}

// runningLocked reports whether the last process started is still alive.
func (n *Node) runningLocked() bool {
	return n.proc != nil && !n.proc.exited()
}

// runningProcLocked returns the running process or an ErrNotRunning error.
func (n *Node) runningProcLocked() (*process, error) {
	if !n.runningLocked() {
		return nil, fmt.Errorf("redlocktest: node %d (%s): %w", n.index, n.Addr(), ErrNotRunning)
	}
	return n.proc, nil
}

// killLocked sends SIGKILL to the running process and waits for it.
func (n *Node) killLocked() error {
	p, err := n.runningProcLocked()
	if err != nil {
		return err
	}
	n.paused = false
	if err := p.kill(); err != nil {
		return fmt.Errorf("redlocktest: kill node %d: %w", n.index, err)
	}
	return nil
}

// terminateLocked sends SIGTERM to the running process (and SIGCONT if it
// is paused) and waits grace for it to exit, then kills it. It reports
// whether SIGKILL was needed.
func (n *Node) terminateLocked(grace time.Duration) (killed bool, err error) {
	p := n.proc
	if err := p.signal(syscall.SIGTERM); err != nil {
		return false, fmt.Errorf("redlocktest: stop node %d: %w", n.index, err)
	}
	if n.paused {
		n.paused = false
		if err := p.signal(syscall.SIGCONT); err != nil {
			return false, fmt.Errorf("redlocktest: stop node %d: %w", n.index, err)
		}
	}
	if p.waitExit(grace) == nil {
		return false, nil
	}
	if err := p.kill(); err != nil {
		return true, fmt.Errorf("redlocktest: stop node %d: %w", n.index, err)
	}
	return true, nil
}

// shutdown stops the node for good; Close calls it.
func (n *Node) shutdown(grace time.Duration) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	defer releasePorts(n.port, n.busPort, n.tlsPort) // once the process is gone
	if !n.runningLocked() {
		return nil
	}
	_, err := n.terminateLocked(grace)
	return err
}

// firstStart picks free ports, writes redis.conf and starts the node,
// moving to new ports if redis-server finds a port taken. A Redis Cluster
// node forgets the cluster state a node-<i> directory kept from an earlier
// run, since its ports are new.
func (n *Node) firstStart(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.removeNodesConf(); err != nil {
		return err
	}
	var err error
	for range portAttempts {
		if err = n.pickPorts(); err != nil {
			return err
		}
		if err = n.pickTLSPort(); err != nil {
			return err
		}
		if err = n.writeConfig(); err != nil {
			return err
		}
		if err = n.launchLocked(ctx); !errors.Is(err, errAddrInUse) {
			return err
		}
		releasePorts(n.port, n.busPort, n.tlsPort) // taken by a process that claims nothing
	}
	return err
}

// pickPorts chooses the node's port and, in a Redis Cluster, a different
// port for its cluster bus: any free one, or its port + busOffset on a
// release without cluster-port.
func (n *Node) pickPorts() (err error) {
	if !n.conf.cluster {
		n.port, err = freePort(0)
		return err
	}
	if !n.conf.version.clusterPortSetting() {
		n.port, err = freePort(busOffset)
		n.busPort = n.port + busOffset
		return err
	}
	if n.port, err = freePort(0); err != nil {
		return err
	}
	for n.busPort = n.port; n.busPort == n.port; {
		if n.busPort, err = freePort(0); err != nil {
			return err
		}
	}
	return nil
}

// removeNodesConf removes the nodes.conf of a Redis Cluster node, if any.
func (n *Node) removeNodesConf() error {
	if !n.conf.cluster {
		return nil
	}
	err := os.Remove(filepath.Join(n.dir, nodesConfName))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("redlocktest: %w", err)
	}
	return nil
}

// startLocked restarts a stopped node on its port, retrying for a while if
// the port is taken.
func (n *Node) startLocked(ctx context.Context) error {
	if n.closed {
		return fmt.Errorf("redlocktest: start node %d: cluster is closed", n.index)
	}
	if n.runningLocked() {
		return fmt.Errorf("redlocktest: start node %d: already running as pid %d", n.index, n.proc.pid())
	}
	deadline := time.Now().Add(rebindTimeout)
	for {
		err := n.launchLocked(ctx)
		if !errors.Is(err, errAddrInUse) || time.Now().After(deadline) {
			return err
		}
		if err := sleep(ctx, rebindPoll); err != nil {
			return fmt.Errorf("redlocktest: start node %d: %w", n.index, err)
		}
	}
}

// launchLocked starts one redis-server process and waits until it is ready.
// On failure the process is killed.
func (n *Node) launchLocked(ctx context.Context) error {
	p, err := spawn(n.server, n.dir, confName)
	if err != nil {
		return fmt.Errorf("redlocktest: start node %d: %w", n.index, err)
	}
	n.proc, n.paused = p, false
	if err := n.waitReady(ctx, p); err != nil {
		_ = p.kill()
		return err
	}
	return nil
}

// waitReady polls until the process answers PING on the node's port, the
// process exits, ctx is done or readyTimeout passes.
func (n *Node) waitReady(ctx context.Context, p *process) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for {
		if n.answers(ctx, p.pid()) {
			return nil
		}
		select {
		case <-p.done:
			return n.exitError(p)
		case <-ctx.Done():
			return fmt.Errorf("redlocktest: node %d (%s) not ready: %w\n%s", n.index, n.Addr(), ctx.Err(), p.output())
		case <-tick.C:
		}
	}
}

// answers reports whether the node's port answers PING and belongs to the
// process pid, not to some other server that took the port.
func (n *Node) answers(ctx context.Context, pid int) bool {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	// do, not Do: the caller holds n.mu, which Do's error takes.
	if pong, err := do(ctx, n.Addr(), n.conf.password, []string{"PING"}); err != nil || pong != "PONG" {
		return false
	}
	info, err := do(ctx, n.Addr(), n.conf.password, []string{"INFO", "server"})
	return err == nil && infoPID(info) == pid
}

// exitError describes a process that exited during start-up, wrapping
// errAddrInUse when its port was taken.
func (n *Node) exitError(p *process) error {
	out := p.output()
	var cause error = p.err
	if strings.Contains(out, "Address already in use") {
		cause = fmt.Errorf("%w (%w)", errAddrInUse, p.err)
	}
	return fmt.Errorf("redlocktest: node %d (%s): redis-server exited during start-up: %w\n%s", n.index, n.Addr(), cause, out)
}

// writeConfig writes redis.conf for the node's current port.
func (n *Node) writeConfig() error {
	conf := n.conf.render(n.port, n.busPort, n.dir)
	for _, line := range n.conf.tls.lines(n.tlsPort) {
		conf += line + "\n"
	}
	if err := os.WriteFile(filepath.Join(n.dir, confName), []byte(conf), 0o600); err != nil {
		return fmt.Errorf("redlocktest: write config: %w", err)
	}
	return nil
}

// infoPID returns the process_id field of an INFO reply, or 0.
func infoPID(info string) int {
	pid, _ := strconv.Atoi(infoField(info, "process_id"))
	return pid
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// nodeConfig is what every node of a cluster has in its redis.conf.
type nodeConfig struct {
	version  Version // of redis-server: the directives it knows
	aof      bool
	password string
	cluster  bool // a Redis Cluster node
	tls      *TLS // a TLS port beside the plaintext one, when set
	extra    []string
}

// render returns redis.conf for a node listening on port, with its Redis
// Cluster bus (if any) on busPort and its directory dir.
func (c nodeConfig) render(port, busPort int, dir string) string {
	lines := []string{
		"bind " + host,
		"port " + strconv.Itoa(port),
		"protected-mode no",
		"daemonize no",
		"dir " + quote(dir),
		"logfile " + quote(filepath.Join(dir, logName)),
		"databases 16",
		`save ""`,
	}
	if c.version.debugSwitch() {
		lines = append(lines, "enable-debug-command local")
	}
	if c.aof {
		lines = append(lines, "appendonly yes", "appendfsync always")
	} else {
		lines = append(lines, "appendonly no")
	}
	if c.password != "" {
		lines = append(lines, "requirepass "+quote(c.password))
	}
	if c.cluster {
		lines = append(lines, clusterConfig(c.version, busPort)...)
	}
	lines = append(lines, c.extra...)
	return strings.Join(lines, "\n") + "\n"
}

// quote quotes s as a redis.conf argument.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := range len(s) {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// minPort is the lowest port freePort picks by itself.
const minPort = 20000

// freePort returns a loopback port that is free right now and claimed by
// no one (see claimPort), and whose port + offset is too when offset is not
// 0 (a Redis Cluster bus before 7.0); this process claims it. It prefers ports below the kernel's ephemeral range (both
// of them): source ports of outgoing connections come from that range, so
// no client connection can take a node's port while the node is down.
// Elsewhere it asks the kernel for a port.
func freePort(offset int) (int, error) {
	free := func(port int) bool {
		if !portsFree(port, offset) || !claimPort(port) {
			return false
		}
		if offset != 0 && !claimPort(port+offset) {
			releasePorts(port)
			return false
		}
		return true
	}
	if low, ok := ephemeralLow(); ok && low-offset > minPort {
		for range 20 {
			if port := minPort + rand.IntN(low-offset-minPort); free(port) {
				return port, nil
			}
		}
	}
	for range 20 {
		port, err := kernelPort()
		if err != nil || free(port) {
			return port, err
		}
	}
	return 0, fmt.Errorf("redlocktest: find a free port: none free and unclaimed (with p+%d free too)", offset)
}

// portsFree reports whether port is free, and port + offset too when
// offset is not 0.
func portsFree(port, offset int) bool {
	return portFree(port) && (offset == 0 || port+offset <= maxPort && portFree(port+offset))
}

// maxPort is the highest TCP port.
const maxPort = 65535

// kernelPort returns a loopback port that the kernel found free.
func kernelPort() (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("redlocktest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// portFree reports whether port can be listened on at 127.0.0.1.
func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// ephemeralLow returns the first port of Linux's ephemeral port range.
func ephemeralLow() (int, bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 0, false
	}
	low, err := strconv.Atoi(fields[0])
	return low, err == nil
}
