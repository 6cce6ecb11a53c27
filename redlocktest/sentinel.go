package redlocktest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	sentinelConfName = "sentinel.conf" // rewritten by the Sentinel as it learns

	// Defaults of SentinelOptions. Sentinel's own (30 s down-after, 3 min
	// failover timeout) are for production; a test wants a failover
	// within a second or two of a kill, and a Sentinel on loopback sees a
	// live master answer in well under 500 ms even on a busy machine.
	defaultQuorum          = 1
	defaultDownAfter       = 500 * time.Millisecond
	defaultFailoverTimeout = 3 * time.Second

	// masterWait bounds WaitMaster: a failover takes the down-after time,
	// up to a second of Sentinel's own desynchronization delay and a few
	// of its 100 ms ticks, far less than this even on a loaded machine.
	masterWait = 20 * time.Second
	masterPoll = 20 * time.Millisecond
)

// SentinelOptions configures a Sentinel. Masters is required; the zero
// value of every other field has a default fit for tests.
type SentinelOptions struct {
	// Masters maps the name of each master the Sentinel monitors to the
	// master's port on 127.0.0.1. It must not be empty. The Sentinel finds
	// the masters' replicas by itself.
	Masters map[string]int
	// Quorum is the number of Sentinels that must agree that a master is
	// down before one of them fails it over; 0 means 1, which lets a lone
	// Sentinel fail a master over.
	Quorum int
	// DownAfter is each master's down-after-milliseconds: how long a
	// master may leave a PING unanswered before the Sentinel sees it down;
	// 0 means 500 ms. It also bounds which replicas may be promoted: one
	// whose link to its master has been down for more than ten times
	// DownAfter before the master went down is not.
	DownAfter time.Duration
	// FailoverTimeout is each master's failover-timeout; 0 means 3 s. The
	// Sentinel does not start another failover of a master within twice
	// this of the last one it attempted without completing it, and
	// reconfigures a replica that follows another address than the master
	// it knows once this has passed.
	FailoverTimeout time.Duration
	// Password is set as the Sentinel's requirepass when not empty. URL
	// and Do use it.
	Password string
	// Config holds extra sentinel.conf lines, written after the monitor
	// lines, such as "sentinel auth-pass locks s3cret" for a master with a
	// password.
	Config []string
	// SentinelPath is the redis-sentinel binary; "" means
	// "redis-sentinel" looked up on PATH.
	SentinelPath string
}

// Sentinel is one redis-sentinel process on a free port of 127.0.0.1,
// monitoring the masters of its SentinelOptions, with a temporary
// directory of its own. Its methods are safe for concurrent use.
type Sentinel struct {
	port     int
	dir      string
	password string
	proc     *process

	closeOnce sync.Once
	closeErr  error
}

// StartSentinel starts a Sentinel for a test and closes it when the test
// ends. It fails the test (it never skips it) if the Sentinel cannot
// start, including when redis-sentinel is not installed.
func StartSentinel(t testing.TB, opts SentinelOptions) *Sentinel {
	t.Helper()
	s, err := NewSentinel(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
		return nil // only reached with a testing.TB whose Fatal returns
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("redlocktest: close Sentinel: %v", err)
		}
	})
	return s
}

// NewSentinel starts a redis-sentinel process and waits until it answers
// PING. It does not wait for the Sentinel to reach the masters. The caller
// must call Close. ctx bounds only the start-up.
func NewSentinel(ctx context.Context, opts SentinelOptions) (*Sentinel, error) {
	if len(opts.Masters) == 0 {
		return nil, errors.New("redlocktest: SentinelOptions.Masters is empty")
	}
	bin, err := findSentinel(opts.SentinelPath)
	if err != nil {
		return nil, err
	}
	dir, _, err := makeDir("")
	if err != nil {
		return nil, err
	}
	s := &Sentinel{dir: dir, password: opts.Password}
	for range portAttempts {
		if err = s.launch(ctx, bin, opts); !errors.Is(err, errAddrInUse) {
			break
		}
	}
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	return s, nil
}

// findSentinel resolves the redis-sentinel binary.
func findSentinel(path string) (string, error) {
	if path == "" {
		path = "redis-sentinel"
	}
	resolved, err := exec.LookPath(path)
	if err != nil {
		return "", fmt.Errorf("redlocktest: redis-sentinel not found: install it (apt-get install -y redis-sentinel); test.sh does: %w", err)
	}
	return resolved, nil
}

// launch picks a free port, writes sentinel.conf and starts the Sentinel
// there, waiting until it is ready. It wraps errAddrInUse when the port
// was taken meanwhile.
func (s *Sentinel) launch(ctx context.Context, bin string, opts SentinelOptions) error {
	var err error
	if s.port, err = freePort(0); err != nil {
		return err
	}
	conf := sentinelConfig(s.port, s.dir, opts)
	if err := os.WriteFile(filepath.Join(s.dir, sentinelConfName), []byte(conf), 0o600); err != nil {
		return fmt.Errorf("redlocktest: write Sentinel config: %w", err)
	}
	if s.proc, err = spawn(bin, s.dir, sentinelConfName); err != nil {
		return fmt.Errorf("redlocktest: start Sentinel: %w", err)
	}
	if err := s.waitReady(ctx); err != nil {
		_ = s.proc.kill()
		return err
	}
	return nil
}

// sentinelConfig returns sentinel.conf for a Sentinel listening on port,
// in dir, with opts' masters (in name order) and extra lines.
func sentinelConfig(port int, dir string, opts SentinelOptions) string {
	quorum := cmp.Or(opts.Quorum, defaultQuorum)
	downAfter := cmp.Or(opts.DownAfter, defaultDownAfter)
	failover := cmp.Or(opts.FailoverTimeout, defaultFailoverTimeout)
	lines := []string{
		"bind " + host,
		"port " + strconv.Itoa(port),
		"daemonize no",
		"dir " + quote(dir),
		"logfile " + quote(filepath.Join(dir, logName)),
	}
	if opts.Password != "" {
		lines = append(lines, "requirepass "+quote(opts.Password))
	}
	names := make([]string, 0, len(opts.Masters))
	for name := range opts.Masters {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		lines = append(lines,
			fmt.Sprintf("sentinel monitor %s %s %d %d", name, host, opts.Masters[name], quorum),
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", name, downAfter.Milliseconds()),
			fmt.Sprintf("sentinel failover-timeout %s %d", name, failover.Milliseconds()))
	}
	lines = append(lines, opts.Config...)
	return strings.Join(lines, "\n") + "\n"
}

// waitReady polls until the Sentinel answers PING as the process it is,
// the process exits, ctx is done or readyTimeout passes.
func (s *Sentinel) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for {
		if s.answers(ctx) {
			return nil
		}
		select {
		case <-s.proc.done:
			var cause error = s.proc.err
			out := s.proc.output()
			if strings.Contains(out, "Address already in use") {
				cause = fmt.Errorf("%w (%w)", errAddrInUse, s.proc.err)
			}
			return fmt.Errorf("redlocktest: Sentinel (%s) exited during start-up: %w\n%s", s.Addr(), cause, out)
		case <-ctx.Done():
			return fmt.Errorf("redlocktest: Sentinel (%s) not ready: %w\n%s", s.Addr(), ctx.Err(), s.proc.output())
		case <-tick.C:
		}
	}
}

// answers reports whether the Sentinel's port answers PING and belongs
// to its process, not to another server that took the port.
func (s *Sentinel) answers(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if pong, err := s.Do(ctx, "PING"); err != nil || pong != "PONG" {
		return false
	}
	info, err := s.Do(ctx, "INFO", "server")
	return err == nil && infoPID(info) == s.proc.pid()
}

// Port returns the Sentinel's TCP port on 127.0.0.1.
func (s *Sentinel) Port() int { return s.port }

// Addr returns "127.0.0.1:port".
func (s *Sentinel) Addr() string { return net.JoinHostPort(host, strconv.Itoa(s.port)) }

// Dir returns the Sentinel's directory, which holds its sentinel.conf (the
// Sentinel rewrites it as it learns of replicas and failovers), redis.log
// and redis.out.
func (s *Sentinel) Dir() string { return s.dir }

// URL returns the node URL of the master called name through this
// Sentinel, as the goredis and rueidis adapters take it:
// "redis://127.0.0.1:port?master_name=name", with the Sentinel's password
// (escaped) in the userinfo when it has one. A master's own password goes
// in a password parameter, which the caller appends.
func (s *Sentinel) URL(name string) string {
	u := url.URL{Scheme: "redis", Host: s.Addr(), RawQuery: url.Values{"master_name": {name}}.Encode()}
	if s.password != "" {
		u.User = url.UserPassword("", s.password)
	}
	return u.String()
}

// Do sends one command to the Sentinel over a new connection (after AUTH
// when it has a password), as Node.Do does to a node.
func (s *Sentinel) Do(ctx context.Context, args ...string) (string, error) {
	return do(ctx, s.Addr(), s.password, args)
}

// MasterAddr returns the address ("ip:port") that the Sentinel gives now
// for the master called name. A name it does not monitor returns an error
// wrapping ErrNil.
func (s *Sentinel) MasterAddr(ctx context.Context, name string) (string, error) {
	reply, err := s.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", name)
	if err != nil {
		return "", fmt.Errorf("redlocktest: Sentinel %s: master %q: %w", s.Addr(), name, err)
	}
	ip, port, ok := strings.Cut(reply, "\n")
	if !ok {
		return "", fmt.Errorf("redlocktest: Sentinel %s: master %q: unexpected reply %q", s.Addr(), name, reply)
	}
	return net.JoinHostPort(ip, port), nil
}

// WaitMaster waits until the Sentinel gives addr ("127.0.0.1:port", as
// Node.Addr returns it) as the master called name, as it does once it has
// failed the master over to the replica at addr. It gives up after 20 s or
// when ctx is done, with an error naming the address it gave last.
func (s *Sentinel) WaitMaster(ctx context.Context, name, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, masterWait)
	defer cancel()
	tick := time.NewTicker(masterPoll)
	defer tick.Stop()
	for {
		got, err := s.MasterAddr(ctx, name)
		if err == nil && got == addr {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redlocktest: Sentinel %s: master %q is not %s (last %q, %v): %w", s.Addr(), name, addr, got, err, ctx.Err())
		case <-tick.C:
		}
	}
}

// Close stops the Sentinel (SIGTERM, then SIGKILL after a short grace
// period), waits for the process to exit and removes its directory. It is
// idempotent: later calls return the first call's result.
func (s *Sentinel) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if err := s.proc.signal(syscall.SIGTERM); err != nil {
			errs = append(errs, fmt.Errorf("redlocktest: stop Sentinel: %w", err))
		}
		if s.proc.waitExit(closeGrace) != nil {
			errs = append(errs, s.proc.kill())
		}
		releasePorts(s.port)
		if err := os.RemoveAll(s.dir); err != nil {
			errs = append(errs, fmt.Errorf("redlocktest: remove Sentinel dir: %w", err))
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
