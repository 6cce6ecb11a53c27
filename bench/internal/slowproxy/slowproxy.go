// Package slowproxy puts a TCP proxy that delays every reply in front of one
// Redis node, to measure how a slow minority of nodes affects a lock.
//
// The proxy (toxiproxy with a latency toxic) runs in a child process, a copy
// of the running executable, so that its CPU time and allocations do not
// count against the library being measured. The executable must call
// RunIfChild first thing in main (and in TestMain for tests).
package slowproxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// envVar carries "upstream latency" to the child process.
const envVar = "REDLOCK_BENCH_SLOWPROXY"

// startTimeout bounds the child's start, up to its "ready" line.
const startTimeout = 10 * time.Second

// Proxy is a running proxy child process. Close stops it.
type Proxy struct {
	addr  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
}

// Start runs a proxy to upstream that delays each chunk of replies by
// latency, and returns once it listens. It blocks for at most a few seconds.
func Start(ctx context.Context, upstream string, latency time.Duration) (*Proxy, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("slowproxy: %w", err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), envVar+"="+upstream+" "+latency.String())
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = sysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("slowproxy: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("slowproxy: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("slowproxy: %w", err)
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
		addr, ok := strings.CutPrefix(line, "ready ")
		if !ok {
			p.Close()
			return nil, fmt.Errorf("slowproxy: child said %q", line)
		}
		p.addr = addr
		return p, nil
	case <-ctx.Done():
		p.Close()
		return nil, fmt.Errorf("slowproxy: start: %w", ctx.Err())
	}
}

// Addr returns the proxy's "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.addr }

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

// RunIfChild serves the proxy and exits when the process was started by
// Start; otherwise it returns at once.
func RunIfChild() {
	spec, ok := os.LookupEnv(envVar)
	if !ok {
		return
	}
	if err := serve(spec); err != nil {
		fmt.Fprintln(os.Stderr, "slowproxy:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// serve runs the proxy described by spec ("upstream latency") until stdin
// closes.
func serve(spec string) error {
	upstream, lat, ok := strings.Cut(spec, " ")
	if !ok {
		return fmt.Errorf("bad spec %q", spec)
	}
	latency, err := time.ParseDuration(lat)
	if err != nil {
		return err
	}
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	proxy := toxiproxy.NewProxy(server, "slow", "127.0.0.1:0", upstream)
	if err := proxy.Start(); err != nil {
		return err
	}
	defer proxy.Stop()
	toxic := fmt.Sprintf(`{"type":"latency","stream":"downstream","attributes":{"latency":%d}}`, latency.Milliseconds())
	if _, err := proxy.Toxics.AddToxicJson(strings.NewReader(toxic)); err != nil {
		return err
	}
	fmt.Printf("ready %s\n", proxy.Listen)
	io.Copy(io.Discard, os.Stdin)
	return nil
}
