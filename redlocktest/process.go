package redlocktest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	outputLines = 20               // lines of output quoted in start errors
	stoppedWait = time.Second      // how long Pause waits for the stopped state
	stoppedPoll = time.Millisecond // and how often it looks
)

// process is one redis-server process. A goroutine reaps it and closes done.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // cmd.Wait's result; read only after done is closed

	dir            string
	logOff, outOff int64 // sizes of redis.log and redis.out before the start
}

// spawn starts server with the configuration file conf in dir (redis.conf
// for a node), appending its stdout and stderr to redis.out.
func spawn(server, dir, conf string) (*process, error) {
	out, err := os.OpenFile(filepath.Join(dir, outName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open output file: %w", err)
	}
	defer out.Close() // the child has its own copy
	p := &process{
		done:   make(chan struct{}),
		dir:    dir,
		logOff: fileSize(filepath.Join(dir, logName)),
		outOff: fileSize(out.Name()),
	}
	p.cmd = exec.Command(server, filepath.Join(dir, conf))
	p.cmd.Dir = dir
	p.cmd.Stdout = out
	p.cmd.Stderr = out
	p.cmd.SysProcAttr = sysProcAttr()
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("run %s: %w", server, err)
	}
	go p.reap()
	return p, nil
}

// reap waits for the process to exit and closes done.
func (p *process) reap() {
	p.err = p.cmd.Wait()
	close(p.done)
}

// pid returns the process id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has exited and been reaped.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig, treating an already exited process as success.
func (p *process) signal(sig os.Signal) error {
	err := p.cmd.Process.Signal(sig)
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// kill sends SIGKILL and waits for the process to exit.
func (p *process) kill() error {
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	return p.waitExit(exitTimeout)
}

// waitExit waits up to timeout for the process to exit.
func (p *process) waitExit(timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
		return fmt.Errorf("pid %d still running after %v", p.pid(), timeout)
	}
}

// waitStopped waits until the kernel reports the process stopped. Where
// /proc is unavailable it returns at once.
func (p *process) waitStopped() error {
	deadline := time.Now().Add(stoppedWait)
	for {
		state, err := procState(p.pid())
		if err != nil || state == 'T' || state == 't' || p.exited() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pid %d not stopped after %v (state %c)", p.pid(), stoppedWait, state)
		}
		time.Sleep(stoppedPoll)
	}
}

// procState returns the state letter from /proc/<pid>/stat.
func procState(pid int) (byte, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, b)
	}
	return b[i+2], nil
}

// output returns the last lines this process wrote to redis.out and
// redis.log, for error messages.
func (p *process) output() string {
	out := readFrom(filepath.Join(p.dir, outName), p.outOff) +
		readFrom(filepath.Join(p.dir, logName), p.logOff)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) > outputLines {
		lines = lines[len(lines)-outputLines:]
	}
	return "redis-server output (" + p.dir + "):\n\t" + strings.Join(lines, "\n\t")
}

// fileSize returns the size of the file at path, or 0.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// readFrom returns the file at path from offset off, or "" on error.
func readFrom(path string, off int64) string {
	b, err := os.ReadFile(path)
	if err != nil || off > int64(len(b)) {
		return ""
	}
	return string(b[off:])
}
