package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// terminal is a shell run as the session leader of a new pseudo-terminal,
// as in a terminal window: what it prints is kept, and keys are typed with
// press.
type terminal struct {
	cmd  *exec.Cmd
	ptmx *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{} // closed once the terminal's output ends
}

// startTerminal starts bash on a new pseudo-terminal, with REDLOCK_NODES
// set to nodes: running script as a shell script does, or, with script
// empty, at a prompt, with job control, reading the lines typed.
func startTerminal(t *testing.T, nodes, script string) *terminal {
	t.Helper()
	args := []string{"--norc", "--noprofile", "-i"}
	if script != "" {
		args = []string{"--norc", "--noprofile", "-c", script}
	}
	cmd := exec.Command("bash", args...)
	cmd.Env = append(os.Environ(), envNodes+"="+nodes, "PS1=$ ")
	ptmx, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{cmd: cmd, ptmx: ptmx, done: make(chan struct{})}
	go term.copyOutput()
	t.Cleanup(term.close)
	return term
}

// close hangs the terminal up, as closing its window does, then kills
// whatever still runs in its session: the shell's jobs run in process
// groups of their own.
func (term *terminal) close() {
	term.ptmx.Close()
	sid := term.cmd.Process.Pid
	syscall.Kill(sid, syscall.SIGKILL)
	term.cmd.Wait()
	for _, pid := range inSession(sid) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// processes describes the processes of the terminal's session: pid, state,
// process group and command line, one a line.
func (term *terminal) processes() string {
	var b strings.Builder
	for _, pid := range inSession(term.cmd.Process.Pid) {
		stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		s := string(stat)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			s = s[i+2:]
		}
		f := strings.Fields(s)
		if len(f) > 5 {
			fmt.Fprintf(&b, "%d %s pgrp %s tpgid %s: %s\n", pid, f[0], f[2], f[5], strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return b.String()
}

// inSession returns the processes of session sid.
func inSession(sid int) []int {
	dirs, _ := os.ReadDir("/proc")
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if err != nil || i < 0 {
			continue
		}
		// After the name: state, ppid, pgrp, session.
		if f := strings.Fields(s[i+1:]); len(f) > 3 && f[3] == strconv.Itoa(sid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func (term *terminal) copyOutput() {
	defer close(term.done)
	buf := make([]byte, 4096)
	for {
		n, err := term.ptmx.Read(buf)
		term.mu.Lock()
		term.out.Write(buf[:n])
		term.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// output returns what the terminal showed so far.
func (term *terminal) output() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.String()
}

// press types key, as a user at the keyboard.
func (term *terminal) press(t *testing.T, key byte) {
	t.Helper()
	if _, err := term.ptmx.Write([]byte{key}); err != nil {
		t.Fatal(err)
	}
}

// wait waits up to timeout for the shell to end, and returns how.
func (term *terminal) wait(t *testing.T, timeout time.Duration) syscall.WaitStatus {
	t.Helper()
	ended := make(chan error, 1)
	go func() { ended <- term.cmd.Wait() }()
	select {
	case <-ended:
	case <-time.After(timeout):
		t.Fatalf("the shell still runs %s later; the terminal shows:\n%s", timeout, term.output())
	}
	return term.cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// waitFor waits up to timeout for the terminal to show s.
func (term *terminal) waitFor(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !strings.Contains(term.output(), s); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal did not show %q within %s; it shows:\n%s\nits processes:\n%s", s, timeout, term.output(), term.processes())
		}
	}
}

const (
	ctrlC = 0x03 // the terminal's interrupt key (VINTR)
	ctrlZ = 0x1a // the terminal's suspend key (VSUSP)
)

// readPid reads the pid a command in the terminal wrote to path.
func (term *terminal) readPid(t *testing.T, path string) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within 10s; the terminal shows:\n%s", path, term.output())
		}
	}
	pid, err := strconv.Atoi(strings.TrimSpace(waitForFile(t, path, time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// assertInterrupted waits for the shell running a script to end, and fails
// the test unless SIGINT ended it before the script wrote the file after.
func (term *terminal) assertInterrupted(t *testing.T, after string) {
	t.Helper()
	ws := term.wait(t, 10*time.Second)
	if b, err := os.ReadFile(after); err == nil {
		t.Errorf("the script went on after Ctrl-C (%s); the terminal shows:\n%s", strings.TrimSpace(string(b)), term.output())
	}
	if !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("the shell ended with %v, want killed by SIGINT", ws)
	}
}

// Ctrl-C on a command that redlock runs from a script in a terminal, or
// while it waits for the lock, ends the script too, loop and all, as it
// would have, had the script run the command itself: redlock ends by
// SIGINT once it has released the lock, so that the shell knows it was
// interrupted. With standard input the terminal, the command has the
// terminal to itself, and redlock passes the SIGINT on to its own process
// group; otherwise the terminal interrupts them all.
func TestRun_ctrlCInATerminalEndsTheScript(t *testing.T) {
	for _, stdin := range []string{"", " < /dev/null"} {
		t.Run("stdin"+stdin, func(t *testing.T) {
			t.Run("running", func(t *testing.T) {
				cluster, nodes := newCluster(t, 3)
				dir := t.TempDir()
				pidFile, after := filepath.Join(dir, "pid"), filepath.Join(dir, "after")
				script := `for i in 1 2; do ` + binary + ` run k -- sh -c 'echo $$ > ` + pidFile + `; exec sleep 60'` + stdin +
					`; echo "status $?" >> ` + after + `; done`
				term := startTerminal(t, nodes, script)
				term.readPid(t, pidFile)
				term.press(t, ctrlC)
				term.assertInterrupted(t, after)
				assertReleased(t, cluster, "k", "after Ctrl-C")
			})
			t.Run("waiting", func(t *testing.T) {
				cluster, nodes := newCluster(t, 3)
				cli(t, "acquire", "--nodes", nodes, "--ttl", "20s", "busy").expect(t, exitOK, "acquire")
				dir := t.TempDir()
				ran, after := filepath.Join(dir, "ran"), filepath.Join(dir, "after")
				script := binary + ` run busy -- touch ` + ran + stdin + `; echo "status $?" > ` + after
				term := startTerminal(t, nodes, script)
				awaitCampaigning(t, cluster, "busy")
				term.press(t, ctrlC)
				term.assertInterrupted(t, after)
				if _, err := os.Stat(ran); err == nil {
					t.Error("the command ran")
				}
			})
		})
	}
}

// typeLine types line and Enter at the shell's prompt.
func (term *terminal) typeLine(t *testing.T, line string) {
	t.Helper()
	if _, err := term.ptmx.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
}

// gatedCommand returns a shell command that writes its pid to pidFile, then
// waits for a line from the FIFO gate (see newGate) and prints "command
// done". It forks nothing meanwhile: a Ctrl-Z that stops a child the shell
// has just forked, before it runs its program, leaves the shell waiting
// for it in the kernel, never stopped, which no shell can tell apart from
// a command that runs on.
func gatedCommand(pidFile, gate string) string {
	return `sh -c 'echo $$ > ` + pidFile + `; read g < ` + gate + `; echo command done'`
}

// newGate makes a FIFO in dir for gatedCommand to wait on.
func newGate(t *testing.T, dir string) string {
	t.Helper()
	gate := filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	return gate
}

// openGate lets the command waiting on gate go on: it writes a line to the
// FIFO once the command opens it.
func openGate(t *testing.T, gate string) {
	go func() {
		if f, err := os.OpenFile(gate, os.O_WRONLY, 0); err == nil {
			f.WriteString("go\n")
			f.Close()
		}
	}()
}

// awaitState waits up to 10 s for process pid to be stopped, or running.
func (term *terminal) awaitState(t *testing.T, pid int, wantStopped bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); stopped(pid) != wantStopped; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: process %d stopped %v after 10s, want %v; the terminal shows:\n%s",
				what, pid, stopped(pid), wantStopped, term.output())
		}
	}
}

// Ctrl-Z on a command that redlock runs at an interactive shell's prompt
// stops the job, command and redlock, and gives the prompt back, as for any
// command; fg runs both on, the lock still held, and the command ends as
// it would have.
func TestRun_ctrlZStopsTheJobAndFgContinuesIt(t *testing.T) {
	for _, stdin := range []string{"the terminal", "not the terminal"} {
		t.Run(stdin, func(t *testing.T) {
			cluster, nodes := newCluster(t, 3)
			dir := t.TempDir()
			pidFile, gate := filepath.Join(dir, "pid"), newGate(t, dir)
			line := binary + ` run --ttl 10s k -- ` + gatedCommand(pidFile, gate)
			if stdin != "the terminal" {
				line += " < /dev/null"
			}
			term := startTerminal(t, nodes, "")
			term.typeLine(t, line)
			pid := term.readPid(t, pidFile)
			term.press(t, ctrlZ)
			term.waitFor(t, "Stopped", 10*time.Second)
			term.awaitState(t, pid, true, "after Ctrl-Z")
			held := 0
			for _, n := range cluster.Nodes() {
				if keyOn(t, n, "k") != "" {
					held++
				}
			}
			if held < 2 {
				t.Fatalf("the lock is held on %d of 3 nodes while the job is stopped", held)
			}
			term.typeLine(t, "fg")
			term.awaitState(t, pid, false, "after fg")
			openGate(t, gate)
			term.waitFor(t, "command done", 10*time.Second)
			term.typeLine(t, `echo "status $?"`)
			term.waitFor(t, "status 0", 10*time.Second)
			assertReleased(t, cluster, "k", "after the command ended")
			term.typeLine(t, "exit")
		})
	}
}

// A job stopped longer than the lock's validity loses the lock: nothing
// renews it. The watchdog kills the command at its deadline, while it is
// stopped, and fg finds it gone: redlock says the lock was lost.
func TestRun_ctrlZLongerThanTheLockKillsTheCommand(t *testing.T) {
	_, nodes := newCluster(t, 3)
	dir := t.TempDir()
	pidFile, gate := filepath.Join(dir, "pid"), newGate(t, dir)
	term := startTerminal(t, nodes, "")
	term.typeLine(t, binary+` run --ttl 1s k -- `+gatedCommand(pidFile, gate))
	pid := term.readPid(t, pidFile)
	term.press(t, ctrlZ)
	term.waitFor(t, "Stopped", 10*time.Second)
	for deadline := time.Now().Add(10 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the command (pid %d) still runs 10s after its job stopped, with a 1s TTL", pid)
		}
	}
	term.typeLine(t, "fg")
	term.typeLine(t, `echo "status $?"`)
	term.waitFor(t, "status "+strconv.Itoa(exitLockLost), 10*time.Second)
	// The watchdog that did its job is not reported as one that died.
	if strings.Contains(term.output(), "exited: should redlock be killed") {
		t.Errorf("the watchdog that killed the command is reported as dead; the terminal shows:\n%s", term.output())
	}
	term.typeLine(t, "exit")
}

// awaitForegroundNot waits up to 10 s for the foreground group of process
// pid's terminal to be another than group.
func (term *terminal) awaitForegroundNot(t *testing.T, pid, group int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		s := string(b)
		// After the name: state, ppid, pgrp, session, tty_nr, tpgid.
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			if f := strings.Fields(s[i+1:]); len(f) > 5 && f[5] != strconv.Itoa(group) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the terminal's foreground is still group %d after 10s; the terminal shows:\n%s", group, term.output())
		}
	}
}

// Ctrl-Z, bg, then fg: the command runs in the background after bg, and
// gets the terminal back after fg, as directly, and reads what is typed
// (redlock gives it the terminal when it reads: a shell sends a job that
// runs in the background no signal when it puts it in the foreground).
func TestRun_ctrlZBgThenFgGivesTheCommandTheTerminal(t *testing.T) {
	_, nodes := newCluster(t, 3)
	dir := t.TempDir()
	pidFile, gate := filepath.Join(dir, "pid"), newGate(t, dir)
	term := startTerminal(t, nodes, "")
	term.typeLine(t, binary+` run k -- sh -c 'echo $$ > `+pidFile+`; read g < `+gate+`; read x; echo "got=$x"'`)
	pid := term.readPid(t, pidFile)
	term.press(t, ctrlZ)
	term.waitFor(t, "Stopped", 10*time.Second)
	term.typeLine(t, "bg")
	term.awaitState(t, pid, false, "after bg")
	term.typeLine(t, "fg")
	term.awaitForegroundNot(t, pid, term.cmd.Process.Pid) // the shell's
	openGate(t, gate)
	term.typeLine(t, "hello")
	term.waitFor(t, "got=hello", 10*time.Second)
	term.typeLine(t, "exit")
}

// A job put in the background that ends there leaves the terminal to the
// shell, which goes on reading commands.
func TestRun_ctrlZBgJobEndsAndTheShellKeepsTheTerminal(t *testing.T) {
	_, nodes := newCluster(t, 3)
	dir := t.TempDir()
	pidFile, gate := filepath.Join(dir, "pid"), newGate(t, dir)
	term := startTerminal(t, nodes, "")
	term.typeLine(t, binary+` run k -- `+gatedCommand(pidFile, gate))
	pid := term.readPid(t, pidFile)
	term.press(t, ctrlZ)
	term.waitFor(t, "Stopped", 10*time.Second)
	term.typeLine(t, "bg")
	term.awaitState(t, pid, false, "after bg")
	openGate(t, gate)
	shell := term.cmd.Process.Pid
	for deadline := time.Now().Add(10 * time.Second); len(inSession(shell)) > 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the job still runs 10s after its command could end; the terminal shows:\n%s", term.output())
		}
	}
	term.typeLine(t, `echo "shell alive"`)
	term.waitFor(t, "shell alive\r\n", 10*time.Second)
	term.typeLine(t, "exit")
}
