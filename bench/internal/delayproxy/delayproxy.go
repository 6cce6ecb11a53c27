// Package delayproxy puts TCP proxies that delay traffic in front of Redis
// nodes: a slow node (its replies delayed) to measure how a slow minority
// affects a lock, or every node behind a delay in both directions, to
// measure a lock over a network rather than loopback.
//
// The proxies (toxiproxy, with a delay toxic of microsecond resolution) run
// in a child process, a copy of the running executable, so that their CPU
// time and allocations do not count against the library being measured.
// The executable must call RunIfChild first thing in main (and in TestMain
// for tests).
package delayproxy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// envVar carries the Spec, as JSON, to the child process.
const envVar = "REDLOCK_BENCH_DELAYPROXY"

// startTimeout bounds the child's start, up to its "ready" line.
const startTimeout = 10 * time.Second

// ErrStart is returned when the child process could not be started or did
// not report its listening addresses.
var ErrStart = errors.New("delayproxy: start")

// Spec says what the child proxies and how.
type Spec struct {
	// Upstreams are the nodes' "host:port", one proxy each.
	Upstreams []string `json:"upstreams"`
	// Delay is added to every chunk of replies, counted from the chunk's
	// arrival at the proxy.
	Delay time.Duration `json:"delay"`
	// BothWays delays the requests by Delay too, as a network does.
	BothWays bool `json:"both_ways"`
	// Overhead is taken off the time a chunk waits in the proxy: what the
	// proxy's own hops add to it, as StartCalibrated measures.
	Overhead time.Duration `json:"overhead"`
}

// Proxy is a running proxy child process. Close stops it.
type Proxy struct {
	addrs []string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
}

// Start runs one proxy per upstream as spec says, and returns once they
// listen. It blocks for at most a few seconds.
func Start(ctx context.Context, spec Spec) (*Proxy, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), envVar+"="+string(b))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = sysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	p := &Proxy{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- strings.TrimSpace(line)
		io.Copy(io.Discard, stdout)
		cmd.Wait()
		close(p.done)
	}()
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	select {
	case line := <-ready:
		addrs, ok := strings.CutPrefix(line, "ready ")
		if !ok || len(strings.Fields(addrs)) != len(spec.Upstreams) {
			p.Close()
			return nil, fmt.Errorf("%w: child said %q", ErrStart, line)
		}
		p.addrs = strings.Fields(addrs)
		return p, nil
	case <-ctx.Done():
		p.Close()
		return nil, fmt.Errorf("%w: %w", ErrStart, ctx.Err())
	}
}

// Addrs returns the proxies' "127.0.0.1:port", in the order of
// Spec.Upstreams.
func (p *Proxy) Addrs() []string { return p.addrs }

// Close stops the child process and waits for it to exit.
func (p *Proxy) Close() {
	p.stdin.Close() // the child exits when its stdin closes
	select {
	case <-p.done:
	case <-time.After(startTimeout):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// RunIfChild serves the proxies and exits when the process was started by
// Start; otherwise it returns at once.
func RunIfChild() {
	spec, ok := os.LookupEnv(envVar)
	if !ok {
		return
	}
	if err := serve(spec); err != nil {
		fmt.Fprintln(os.Stderr, "delayproxy:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
