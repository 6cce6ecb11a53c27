package faults

import (
	"context"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
)

//go:embed clockshim/clockshim.c
var clockShimSource []byte

// ErrNoCompiler means the clock shim cannot be built because there is no C
// compiler: scenarios that move clocks cannot run.
var ErrNoCompiler = errors.New("faults: no C compiler (cc or gcc) to build the clock shim")

// clockFile is the name of the shift file in each node's directory; the
// wrapper script creates it before redis-server starts.
const clockFile = "clockshim.bin"

// clockCheckTolerance is how far a node's TIME may be from the expected
// shifted time in CheckClock: generous, since it only has to tell a shifted
// clock (hours away) from an unshifted one.
const clockCheckTolerance = 5 * time.Second

// ClockShim is the built clock shim and a redis-server wrapper that preloads
// it. It keeps the shift of each node's clock. Its methods are safe for
// concurrent use.
type ClockShim struct {
	lib, wrapper string

	mu     sync.Mutex
	shifts map[string]shift // by node directory
}

// shift is one node's clock: fake = real + offset + (real - base) * ppm / 1e6.
type shift struct {
	offset time.Duration
	ppm    int64
	base   int64 // real time, Unix ns
}

// BuildClockShim compiles clockshim.c into dir and writes a wrapper script
// there that runs server (a path) with the shim preloaded and its shift
// file in the node's directory. It fails with ErrNoCompiler when no C
// compiler is installed.
func BuildClockShim(ctx context.Context, dir, server string) (*ClockShim, error) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		if cc, err = exec.LookPath("gcc"); err != nil {
			return nil, ErrNoCompiler
		}
	}
	if server, err = exec.LookPath(server); err != nil {
		return nil, fmt.Errorf("faults: clock shim: %w", err)
	}
	src := filepath.Join(dir, "clockshim.c")
	lib := filepath.Join(dir, "clockshim.so")
	if err := os.WriteFile(src, clockShimSource, 0o644); err != nil {
		return nil, fmt.Errorf("faults: clock shim: %w", err)
	}
	out, err := exec.CommandContext(ctx, cc, "-O2", "-shared", "-fPIC", "-Wall", "-o", lib, src).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("faults: build clock shim: %w\n%s", err, out)
	}
	wrapper := filepath.Join(dir, "redis-server-clockshim")
	script := "#!/bin/sh\n" +
		"# Runs redis-server with the clock shim preloaded; the clock's shift is\n" +
		"# in " + clockFile + " in the node's directory (the working directory).\n" +
		"[ -f " + clockFile + " ] || head -c 24 /dev/zero > " + clockFile + " || exit 1\n" +
		"CLOCKSHIM_FILE=\"$(pwd)/" + clockFile + "\" LD_PRELOAD=" + shellQuote(lib) + " exec " + shellQuote(server) + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		return nil, fmt.Errorf("faults: clock shim: %w", err)
	}
	return &ClockShim{lib: lib, wrapper: wrapper, shifts: map[string]shift{}}, nil
}

// ServerPath returns the wrapper script, to be used as the redis-server
// binary of every node whose clock may move.
func (s *ClockShim) ServerPath() string { return s.wrapper }

// Jump moves node's clock forward by d (backward if d is negative), at once.
func (s *ClockShim) Jump(node *redlocktest.Node, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh := s.shifts[node.Dir()]
	sh.offset += d
	return s.writeLocked(node, sh)
}

// Skew makes node's clock run ppm parts per million faster than real time
// from now on (slower if negative; 0 for real speed), keeping the shift it
// has accumulated so far.
func (s *ClockShim) Skew(node *redlocktest.Node, ppm int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh := s.shifts[node.Dir()]
	now := time.Now().UnixNano()
	if sh.ppm != 0 && now > sh.base {
		sh.offset += time.Duration((now - sh.base) * sh.ppm / 1_000_000)
	}
	sh.ppm, sh.base = ppm, now
	return s.writeLocked(node, sh)
}

// Offset returns how far node's clock is ahead of real time now.
func (s *ClockShim) Offset(node *redlocktest.Node) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh := s.shifts[node.Dir()]
	off := sh.offset
	if now := time.Now().UnixNano(); sh.ppm != 0 && now > sh.base {
		off += time.Duration((now - sh.base) * sh.ppm / 1_000_000)
	}
	return off
}

// writeLocked stores sh as node's shift. The file is written in place, never
// truncated: redis-server has it mapped, and a truncated mapping faults.
func (s *ClockShim) writeLocked(node *redlocktest.Node, sh shift) error {
	var b [24]byte
	binary.LittleEndian.PutUint64(b[0:], uint64(sh.offset))
	binary.LittleEndian.PutUint64(b[8:], uint64(sh.ppm))
	binary.LittleEndian.PutUint64(b[16:], uint64(sh.base))
	f, err := os.OpenFile(filepath.Join(node.Dir(), clockFile), os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("faults: clock of node %d: %w", node.Index(), err)
	}
	_, err = f.WriteAt(b[:], 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("faults: clock of node %d: %w", node.Index(), err)
	}
	s.shifts[node.Dir()] = sh
	return nil
}

// CheckClock asks node for its TIME and fails unless it is within a few
// seconds of real time plus the shift the shim was given: it proves that
// the shim is loaded and effective.
func (s *ClockShim) CheckClock(ctx context.Context, node *redlocktest.Node) error {
	reply, err := node.Do(ctx, "TIME")
	if err != nil {
		return fmt.Errorf("faults: clock check: %w", err)
	}
	sec, usec, ok := strings.Cut(reply, "\n")
	secs, err1 := strconv.ParseInt(sec, 10, 64)
	usecs, err2 := strconv.ParseInt(usec, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return fmt.Errorf("faults: clock check: unexpected TIME reply %q", reply)
	}
	got := time.Unix(secs, usecs*1000)
	want := time.Now().Add(s.Offset(node))
	if diff := got.Sub(want); diff > clockCheckTolerance || diff < -clockCheckTolerance {
		return fmt.Errorf("faults: clock check: node %d says %s, want %s (shift %s): the clock shim is not in effect",
			node.Index(), got.UTC().Format(time.RFC3339Nano), want.UTC().Format(time.RFC3339Nano), s.Offset(node))
	}
	return nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
