package nodes

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

const (
	host = "127.0.0.1"

	// readyPoll is the PING interval while a server starts: short, since a
	// local redis-server is up within a few milliseconds.
	readyPoll = 5 * time.Millisecond
	// readyTimeout bounds one server's start; generous for a loaded machine.
	readyTimeout = 10 * time.Second
	// portAttempts is how many free ports a start tries: another process may
	// take the port between our probe and the server's bind.
	portAttempts = 5
	// stopGrace is how long Close waits after SIGTERM before SIGKILL.
	stopGrace = 5 * time.Second
)

// Set is a group of running redis-server processes. Close stops them.
type Set struct {
	nodes  []*node
	probes atomic.Int64 // connections opened by Connections and Commands
	// infos counts the INFO requests that Connections and Commands sent,
	// which INFO commandstats counts as the servers' work.
	infos atomic.Int64
}

type node struct {
	addr string
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts count redis-server processes from the binary server (looked up
// in PATH when it has no slash) and blocks until each answers PING or ctx
// ends. On error the processes already started are stopped.
func Start(ctx context.Context, server string, count int) (*Set, error) {
	path, err := exec.LookPath(server)
	if err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	s := &Set{}
	for range count {
		n, err := startNode(ctx, path)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.nodes = append(s.nodes, n)
	}
	return s, nil
}

// Addrs returns each server's "127.0.0.1:port", in start order.
func (s *Set) Addrs() []string {
	addrs := make([]string, len(s.nodes))
	for i, n := range s.nodes {
		addrs[i] = n.addr
	}
	return addrs
}

// PIDs returns each server's process id, in start order.
func (s *Set) PIDs() []int {
	pids := make([]int, len(s.nodes))
	for i, n := range s.nodes {
		pids[i] = n.cmd.Process.Pid
	}
	return pids
}

// Close stops every server (SIGTERM, then SIGKILL after a grace period) and
// removes their directories.
func (s *Set) Close() {
	for _, n := range s.nodes {
		n.stop()
	}
	s.nodes = nil
}

func startNode(ctx context.Context, server string) (*node, error) {
	var lastErr error
	for range portAttempts {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		n, err := spawn(server, port)
		if err != nil {
			return nil, err
		}
		if err = n.waitReady(ctx); err == nil {
			return n, nil
		}
		n.stop()
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

// freePort returns a TCP port that was free on loopback a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("nodes: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func spawn(server string, port int) (*node, error) {
	dir, err := os.MkdirTemp("", "redlock-bench-")
	if err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	out, err := os.Create(filepath.Join(dir, "redis.out"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("nodes: %w", err)
	}
	defer out.Close()
	cmd := exec.Command(server,
		"--bind", host, "--port", strconv.Itoa(port), "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no",
		"--protected-mode", "no", "--loglevel", "warning")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("nodes: run %s: %w", server, err)
	}
	n := &node{addr: net.JoinHostPort(host, strconv.Itoa(port)), dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(n.done)
	}()
	return n, nil
}

// waitReady polls PING until the server answers PONG.
func (n *node) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		err := Ping(ctx, n.addr)
		if err == nil {
			return nil
		}
		select {
		case <-n.done:
			out, _ := os.ReadFile(filepath.Join(n.dir, "redis.out"))
			return fmt.Errorf("nodes: redis-server on %s exited: %s", n.addr, strings.TrimSpace(string(out)))
		case <-ctx.Done():
			return fmt.Errorf("nodes: redis-server on %s not ready: %w", n.addr, errors.Join(ctx.Err(), err))
		case <-time.After(readyPoll):
		}
	}
}

func (n *node) stop() {
	n.cmd.Process.Signal(sigterm)
	select {
	case <-n.done:
	case <-time.After(stopGrace):
		n.cmd.Process.Kill()
		<-n.done
	}
	os.RemoveAll(n.dir)
}

// Ping sends one PING over a new connection to addr and checks for PONG.
func Ping(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("nodes: %s answered %q to PING", addr, strings.TrimSpace(line))
	}
	return nil
}

// RoundTrip measures the median time of count PINGs sent one after another
// over one connection to addr: the floor of any request to a node.
func RoundTrip(ctx context.Context, addr string, count int) (time.Duration, error) {
	times, err := RoundTrips(ctx, addr, count)
	if err != nil {
		return 0, err
	}
	return Median(times), nil
}

// RoundTrips returns the times of count PINGs sent one after another over
// one new connection to addr.
func RoundTrips(ctx context.Context, addr string, count int) ([]time.Duration, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	r := bufio.NewReader(c)
	ping := []byte("PING\r\n")
	times := make([]time.Duration, count)
	for i := range times {
		start := time.Now()
		if _, err := c.Write(ping); err != nil {
			return nil, fmt.Errorf("nodes: %w", err)
		}
		if _, err := r.ReadString('\n'); err != nil {
			return nil, fmt.Errorf("nodes: %w", err)
		}
		times[i] = time.Since(start)
	}
	return times, nil
}
