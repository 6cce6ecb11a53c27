package wire

import (
	"slices"
	"testing"
)

// The commands read from the scripts include those a release runs, and
// leave out List's and those the scripts only pcall.
func TestLockCommands(t *testing.T) {
	cmds := LockCommands()
	for _, want := range []string{"DEL", "ZREM", "HDEL", "ZSCORE", "EXISTS", "SET", "PEXPIRE", "TIME"} {
		if !slices.Contains(cmds, want) {
			t.Errorf("LockCommands() = %v: no %s", cmds, want)
		}
	}
	for _, not := range []string{"SCAN", "GETRANGE", "PUBSUB", "INFO", "SPUBLISH", "PUBLISH"} {
		if slices.Contains(cmds, not) {
			t.Errorf("LockCommands() = %v: has %s", cmds, not)
		}
	}
	if !slices.IsSorted(cmds) || len(slices.Compact(slices.Clone(cmds))) != len(cmds) {
		t.Errorf("LockCommands() = %v: not sorted, or a command twice", cmds)
	}
}
