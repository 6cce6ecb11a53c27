package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// When redlock itself is killed, nobody renews the lock: the kernel kills
// the command with it, rather than let it run on past the lock's TTL.
func TestRun_commandDiesWithRedlock(t *testing.T) {
	_, nodes := newCluster(t, 3)
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd, _ := startRun(t, nodes, "run", "--ttl", "30s", "k", "--", "sh", "-c", `echo $$ > `+pidFile+`; exec sleep 60`)
	pid, err := strconv.Atoi(strings.TrimSpace(waitForFile(t, pidFile, 10*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Wait() // not cmd.Wait: the command holds redlock's stderr pipe open
	for deadline := time.Now().Add(10 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the command (pid %d) still runs 10s after redlock was killed", pid)
		}
	}
}

// A redlock that stops without dying (SIGSTOP, Ctrl-Z on it, a hang)
// renews nothing, and cannot stop the command by the lock's deadline: its
// watchdog kills the command's group then, while redlock is still stopped,
// rather than let the command run on past the lock, beside the next holder.
func TestRun_commandKilledByItsDeadlineWhileRedlockIsStopped(t *testing.T) {
	_, nodes := newCluster(t, 3)
	cmd, stderr, pid := startWatchedRun(t, nodes, "1s")
	// Continued, redlock exits as for a lost lock, whichever it sees first
	// of the command's end, its watchdog's and its own deadline. Before, it
	// exited 137, the command's status, when it saw the command's end
	// first.
	stopUntilKilled(t, cmd, stderr, pid, "the command")
	if !strings.Contains(stderr.String(), "the watchdog killed process group") {
		t.Errorf("redlock does not say that its watchdog killed the command:\n%s", stderr)
	}
}

// stopUntilKilled stops redlock with SIGSTOP until its watchdog has killed
// the process pid (within 10 s), then continues it and waits for it to
// exit as for a lost lock. what names the process pid in a failure.
func stopUntilKilled(t *testing.T, redlock *exec.Cmd, stderr fmt.Stringer, pid int, what string) {
	t.Helper()
	if err := redlock.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer redlock.Process.Signal(syscall.SIGCONT)
	for deadline := time.Now().Add(10 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) still runs 10s after redlock stopped", what, pid)
		}
	}
	if !stopped(redlock.Process.Pid) {
		t.Fatalf("redlock runs again: the end of %s proves nothing of the watchdog", what)
	}
	if err := redlock.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitTimeout(redlock, 20*time.Second)
	if code := redlock.ProcessState.ExitCode(); code != exitLockLost {
		t.Fatalf("redlock continued after its watchdog killed %s: exit %d, want %d\n%s", what, code, exitLockLost, stderr)
	}
	// Whichever it sees first on being continued, it says that the
	// watchdog killed the command, and signals nothing more.
	if said := stderr.String(); strings.Contains(said, "SIGTERM") || strings.Contains(said, "sending SIGKILL") {
		t.Fatalf("redlock continued after its watchdog killed %s says it signals it:\n%s", what, said)
	}
}

// startWatchedRun starts a run of a command that sleeps under a lock with
// the TTL ttl, and returns it, its stderr and the command's pid, once the
// command runs and its watchdog too, armed from its start: a redlock
// stopped before it started one has none, and the command outlives it.
// The command is killed at the end of the test.
func startWatchedRun(t *testing.T, nodes, ttl string) (*exec.Cmd, *bytes.Buffer, int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd, stderr := startRun(t, nodes, "run", "--ttl", ttl, "k", "--", "sh", "-c", `echo $$ > `+pidFile+`; exec sleep 60`)
	pid, err := strconv.Atoi(strings.TrimSpace(waitForFile(t, pidFile, 10*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	for deadline := time.Now().Add(10 * time.Second); !watchdogRuns(strconv.Itoa(pid)); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no watchdog of process group %d", pid)
		}
	}
	return cmd, stderr, pid
}

// stopped reports whether process pid is stopped (by a signal).
func stopped(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return err == nil && i >= 0 && i+2 < len(s) && s[i+2] == 'T'
}

// alive reports whether process pid exists and has not exited: a zombie
// that nobody reaped yet counts as gone.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// What the command started dies with redlock too: a script's foreground
// and background children, which the kernel's signal to the command's own
// process does not reach, are killed by the watchdog of its process group.
func TestRun_commandsChildrenDieWithRedlock(t *testing.T) {
	_, nodes := newCluster(t, 3)
	dir := t.TempDir()
	bgFile, fgFile := filepath.Join(dir, "bg"), filepath.Join(dir, "fg")
	script := `sleep 60 & echo $! > ` + bgFile + `; sh -c 'echo $$ > ` + fgFile + `; exec sleep 60'; true`
	cmd, _ := startRun(t, nodes, "run", "--ttl", "30s", "k", "--", "sh", "-c", script)
	var pids []int
	for _, f := range []string{bgFile, fgFile} {
		pid, err := strconv.Atoi(strings.TrimSpace(waitForFile(t, f, 10*time.Second)))
		if err != nil {
			t.Fatal(err)
		}
		defer syscall.Kill(pid, syscall.SIGKILL)
		pids = append(pids, pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Wait()
	for _, pid := range pids {
		for deadline := time.Now().Add(10 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("a process the command started (pid %d) still runs 10s after redlock was killed", pid)
			}
		}
	}
}

// A run that ends as it should leaves alone what the command started in
// the background, as the README says: the watchdog kills nothing.
func TestRun_watchdogLeavesABackgroundJobAfterANormalEnd(t *testing.T) {
	_, nodes := newCluster(t, 3)
	dir := t.TempDir()
	bgFile, shFile := filepath.Join(dir, "bg"), filepath.Join(dir, "sh")
	r := runBinary(t, nodes, "run", "k", "--", "sh", "-c", `sleep 30 > /dev/null 2>&1 & echo $! > `+bgFile+`; echo $$ > `+shFile)
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(waitForFile(t, bgFile, 10*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	// The command's group is the shell's pid: once its watchdog exited,
	// the watchdog has decided.
	group := strings.TrimSpace(waitForFile(t, shFile, 10*time.Second))
	for deadline := time.Now().Add(10 * time.Second); watchdogRuns(group); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the watchdog of group %s still runs 10s after redlock ended", group)
		}
	}
	if !alive(pid) {
		t.Fatal("the background job was killed after a normal end")
	}
}

// watchdogRuns reports whether a watchdog of the process group group runs:
// a process "<redlock> _watchdog <group> <kill-at>".
func watchdogRuns(group string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) == 4 && args[1] == watchdogVerb && args[2] == group && alive(pidOf(p)) {
			return true
		}
	}
	return false
}

// pidOf returns the pid of a /proc/PID/... path.
func pidOf(path string) int {
	pid, _ := strconv.Atoi(strings.Split(strings.TrimPrefix(path, "/proc/"), "/")[0])
	return pid
}

// A watchdog that dies (killed by someone) leaves the command unprotected
// should redlock die or stop: redlock says so at once, while it can.
func TestRun_watchdogDeathIsReported(t *testing.T) {
	_, nodes := newCluster(t, 3)
	dir := t.TempDir()
	pidFile, errFile := filepath.Join(dir, "pid"), filepath.Join(dir, "stderr")
	stderr, err := os.Create(errFile)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd := binaryCommand(nodes, "run", "k", "--", "sh", "-c", `echo $$ > `+pidFile+`; exec sleep 60`)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Signal(syscall.SIGTERM)
	pid, err := strconv.Atoi(strings.TrimSpace(waitForFile(t, pidFile, 10*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	dog := childWith(t, cmd.Process.Pid, watchdogVerb)
	if err := syscall.Kill(dog, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	want := "watchdog of process group " + strconv.Itoa(pid)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(errFile)
		if strings.Contains(string(b), want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10s after its watchdog was killed, redlock has not said so; stderr:\n%s", b)
		}
	}
}

// childWith returns the pid of the child of process parent whose command
// line has word, waiting up to 10 s for it.
func childWith(t *testing.T, parent int, word string) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		dirs, _ := os.ReadDir("/proc")
		for _, d := range dirs {
			pid, err := strconv.Atoi(d.Name())
			if err != nil {
				continue
			}
			stat, _ := os.ReadFile("/proc/" + d.Name() + "/stat")
			cmdline, _ := os.ReadFile("/proc/" + d.Name() + "/cmdline")
			s := string(stat)
			i := strings.LastIndexByte(s, ')')
			if i < 0 || !strings.Contains(string(cmdline), word) {
				continue
			}
			if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == strconv.Itoa(parent) {
				return pid
			}
		}
	}
	t.Fatalf("no child of %d runs %q", parent, word)
	return 0
}

// A watchdog is armed from its start: told nothing by redlock (stopped
// right after it started the command), it kills the group at the time it
// was started with.
func TestWatchdog_armedFromItsStart(t *testing.T) {
	sleeper := exec.Command("sleep", "60")
	sleeper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Process.Kill()
	exited := make(chan error, 1)
	go func() { exited <- sleeper.Wait() }()
	// A process of its own, as redlock starts it (TestMain runs the
	// verb): the watchdog ignores the signals that end redlock, which
	// this test process must not.
	at := time.Now().Add(200 * time.Millisecond)
	wd := exec.Command(os.Args[0], watchdogVerb, strconv.Itoa(sleeper.Process.Pid), strconv.FormatInt(at.UnixMilli(), 10))
	silent, err := wd.StdinPipe() // redlock's end, open and silent
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if err := wd.Start(); err != nil {
		t.Fatal(err)
	}
	wd.Wait()
	if code := wd.ProcessState.ExitCode(); code != watchdogKilled {
		t.Fatalf("watchdog: exit %d, want %d", code, watchdogKilled)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the group outlived its watchdog's deadline")
	}
}

// A redlock stopped just after a renewal, before it gave its watchdog the
// new deadline, has the command killed at the deadline before, while the
// lock is still valid: continued, it still exits as for a lost lock, and
// says why, rather than with the command's 137 and no word of the kill.
func TestRun_watchdogsKillExitsAsALostLockAfterARenewal(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	cmd, stderr, pid := startWatchedRun(t, nodes, "3s")
	// The first renewal, a third of the TTL in: the key's TTL on a node
	// rises again. redlock is stopped as soon as it does.
	node := cluster.Nodes()[0]
	pttl := func() int {
		v, err := node.Do(bg, "PTTL", "k")
		if err != nil {
			return -1
		}
		ms, _ := strconv.Atoi(v)
		return ms
	}
	lowest := pttl()
	for deadline := time.Now().Add(10 * time.Second); ; {
		ms := pttl()
		if ms > lowest+300 {
			break
		}
		lowest = min(lowest, ms)
		if time.Now().After(deadline) {
			t.Fatalf("no renewal seen within 10 s of a 3 s TTL (PTTL %d ms)", ms)
		}
	}
	stopUntilKilled(t, cmd, stderr, pid, "the command")
}
