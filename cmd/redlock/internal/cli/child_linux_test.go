package cli

import (
	"os"
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
