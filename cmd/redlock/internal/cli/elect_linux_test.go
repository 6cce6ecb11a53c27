package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Without a command, a leader that was stopped (SIGSTOP, Ctrl-Z) past the
// lead's deadline has it ended by its watchdog, and says, once continued,
// that the lead was lost, in the same words.
func TestElect_withoutCommandStoppedPastItsDeadlineSaysTheLeadWasLost(t *testing.T) {
	_, nodes := newCluster(t, 3)
	leader, _, stderr := startHoldingLead(t, nodes, "--ttl", "1s", "svc", "host-a")
	holder := holdProcess(t, leader.Process.Pid)
	t.Cleanup(func() { syscall.Kill(holder, syscall.SIGKILL) })
	// A redlock stopped before it started its watchdog has none.
	for deadline := time.Now().Add(10 * time.Second); !watchdogRuns(strconv.Itoa(holder)); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no watchdog of process group %d", holder)
		}
	}
	stopUntilKilled(t, leader, stderr, holder, "the lead's holder")
	assertLeadLostSaid(t, stderr.String(), `redlock elect: lost the lead of "svc": lock "svc" `)
}

// holdProcess returns the pid of the child that holds the lead for the
// elect of pid (the hidden verb _hold), found in /proc.
func holdProcess(t *testing.T, pid int) int {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		stat, serr := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil || serr != nil || !bytes.HasSuffix(cmdline, []byte("\x00"+holdVerb+"\x00")) {
			continue
		}
		// stat: pid (comm) state ppid ...
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			child, _ := strconv.Atoi(filepath.Base(dir))
			return child
		}
	}
	t.Fatalf("no %s child of elect (pid %d)", holdVerb, pid)
	return 0
}
