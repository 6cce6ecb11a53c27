package traffic

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redlock-go/redlock/torture/history"
)

const (
	// stopGrace is how long Stop lets a worker finish its cycle before
	// killing it. A cycle is a few TTLs at most, even one held to its
	// deadline. Workers that think for seconds get twice a TTL and a
	// think, and a reader's rest as long, on top, and workers that wait
	// longer than four TTLs to acquire the excess (see Worker.grace).
	stopGrace = 5 * time.Second
	// stoppedWait bounds how long Pause waits for the kernel to report the
	// process stopped; stoppedPoll is how often it looks.
	stoppedWait = time.Second
	stoppedPoll = 200 * time.Microsecond
	// stderrKeep is how much of a worker's standard error is kept for
	// error messages.
	stderrKeep = 4 << 10
)

// Worker is a running worker process, as the harness sees it. Its methods
// are safe for concurrent use.
type Worker struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	done   chan struct{} // closed once the process exited and its output is read
	ready  chan struct{} // closed once the worker said it is ready (see Ready)
	stderr *tailBuffer
	grace  time.Duration // how long Stop waits for the cycle to end

	mu      sync.Mutex
	paused  bool
	killed  bool // by Kill: its exit is no failure
	waitErr error
}

// Spawn starts the executable exe as the worker cfg, with EnvWorker set;
// exe must call RunIfWorker first thing. The worker's history events are
// appended to rec as they arrive. Stop ends it.
func Spawn(exe string, cfg Config, rec *history.Recorder) (*Worker, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	raw, err := cfg.encode()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), EnvWorker+"="+raw)
	cmd.SysProcAttr = sysProcAttr()
	w := &Worker{name: cfg.Name, cmd: cmd, done: make(chan struct{}), ready: make(chan struct{}), stderr: &tailBuffer{},
		grace: stopGrace + 2*(cfg.TTL+cfg.ThinkMax) + max(0, cfg.waitFor()-4*cfg.ttl())}
	cmd.Stderr = w.stderr
	if w.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("traffic: %s: %w", cfg.Name, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("traffic: %s: %w", cfg.Name, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("traffic: start %s: %w", cfg.Name, err)
	}
	go w.collect(stdout, rec)
	return w, nil
}

// collect appends the worker's events to rec until its output ends, then
// reaps the process.
func (w *Worker) collect(stdout io.Reader, rec *history.Recorder) {
	defer close(w.done)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if string(sc.Bytes()) == readyLine {
			close(w.ready)
			continue
		}
		var ev history.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			fmt.Fprintf(w.stderr, "unreadable history line %q: %v\n", sc.Bytes(), err)
			continue
		}
		ev.Process = processName(ev.Process, w.name)
		rec.Append(ev)
	}
	err := w.cmd.Wait()
	w.mu.Lock()
	w.waitErr = err
	w.mu.Unlock()
}

// processName is the name under which an event that a worker process
// recorded as process enters the history: its own name when it is the
// worker's or one of the worker's goroutines' ("<worker>.<g>"), whose
// operations are told apart by it, and the worker's otherwise.
func processName(process, worker string) string {
	if isOf(process, worker) {
		return process
	}
	return worker
}

// Ready returns a channel closed once the worker made its client and is
// about to begin its first cycle: how long a process takes to start is not
// part of a scenario's run.
func (w *Worker) Ready() <-chan struct{} { return w.ready }

// isOf reports whether process is worker or one of worker's goroutines.
func isOf(process, worker string) bool {
	return process == worker || strings.HasPrefix(process, worker+".")
}

// IsOf reports whether process is the worker's name or one of its
// goroutines'.
func (w *Worker) IsOf(process string) bool {
	return isOf(process, w.name)
}

// Name returns the worker's name.
func (w *Worker) Name() string { return w.name }

// PID returns the worker's process id.
func (w *Worker) PID() int { return w.cmd.Process.Pid }

// Done returns a channel closed once the worker process exited and its
// output was read.
func (w *Worker) Done() <-chan struct{} { return w.done }

// Exited reports whether the worker process has exited.
func (w *Worker) Exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// Pause stops the worker with SIGSTOP and waits until the kernel reports it
// stopped, so that the pause is in effect when Pause returns.
func (w *Worker) Pause() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.Exited() {
		return fmt.Errorf("traffic: pause %s: exited", w.name)
	}
	if err := w.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("traffic: pause %s: %w", w.name, err)
	}
	w.paused = true
	deadline := time.Now().Add(stoppedWait)
	for {
		state, err := procState(w.PID())
		if err != nil || state == 'T' || state == 't' || w.Exited() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("traffic: pause %s: not stopped after %v (state %c)", w.name, stoppedWait, state)
		}
		time.Sleep(stoppedPoll)
	}
}

// Resume continues a paused worker with SIGCONT; it does nothing to a
// worker that is not paused.
func (w *Worker) Resume() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.resumeLocked()
}

func (w *Worker) resumeLocked() error {
	if !w.paused || w.Exited() {
		w.paused = false
		return nil
	}
	w.paused = false
	if err := w.cmd.Process.Signal(syscall.SIGCONT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("traffic: resume %s: %w", w.name, err)
	}
	return nil
}

// Kill kills the worker with SIGKILL, as a fault: it never resumes, and
// Stop does not count its death as a failure.
func (w *Worker) Kill() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.killed = true
	if err := w.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("traffic: kill %s: %w", w.name, err)
	}
	return nil
}

// Stop asks the worker to stop after its current cycle (by closing its
// standard input), resuming it first if it is paused, and waits for it to
// exit; after a grace period of a few seconds it kills it. It returns an
// error if the worker failed or had to be killed, quoting its standard
// error.
func (w *Worker) Stop() error {
	w.mu.Lock()
	err := w.resumeLocked()
	w.mu.Unlock()
	w.stdin.Close()
	t := time.NewTimer(w.grace)
	defer t.Stop()
	select {
	case <-w.done:
	case <-t.C:
		_ = w.cmd.Process.Kill()
		<-w.done
		return errors.Join(err, fmt.Errorf("traffic: %s did not stop within %v and was killed\n%s", w.name, w.grace, w.stderr))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waitErr != nil && !w.killed {
		return errors.Join(err, fmt.Errorf("traffic: %s: %w\n%s", w.name, w.waitErr, w.stderr))
	}
	return err
}

// procState returns the state letter from /proc/<pid>/stat.
func procState(pid int) (byte, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, s)
	}
	return s[i+2], nil
}

// tailBuffer keeps the last stderrKeep bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

// Write keeps the tail of what it is given; it never fails.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > stderrKeep {
		t.buf = t.buf[len(t.buf)-stderrKeep:]
	}
	return len(p), nil
}

// String returns what was kept, trimmed.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
