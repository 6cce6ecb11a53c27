package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/bench/internal/drivers"
	"github.com/redlock-go/redlock/bench/internal/report"
)

// TestMemory_namesLeftBehind runs the memory measurement with a few hundred
// names and no wait, and checks that every library went through its names,
// that the measurement sees what a name leaves right after its release —
// redlock's fencing counter, one key per name for TTL + RecoveryDelay
// (SAFETY.md), and nothing from bsm/redislock's SET and compare-and-delete
// on its one node — and that the files and the README section were
// written.
func TestMemory_namesLeftBehind(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 22 nodes")
	}
	out := t.TempDir()
	readme := filepath.Join(out, "README.md")
	if err := os.WriteFile(readme, []byte(memoryReadmeBegin+"\nold\n"+memoryReadmeEnd+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	const names = 500
	if code := run(context.Background(), []string{"-memory", "-memory-names", strconv.FormatInt(names, 10), "-memory-wait", "0s", "-quiet",
		"-out", out, "-readme", readme}, new(strings.Builder), &stderr); code != 0 {
		t.Fatalf("exit status %d: %s", code, stderr.String())
	}
	var m report.Memory
	readJSON(t, filepath.Join(out, "memory.json"), &m)
	if len(m.Rows) != len(drivers.All()) {
		t.Fatalf("%d rows, want one per library (%d)", len(m.Rows), len(drivers.All()))
	}
	for _, row := range m.Rows {
		checkResidue(t, row, names)
	}
	if s := readFile(t, readme); strings.Contains(s, "\nold\n") || !strings.Contains(s, "| redlock/goredis | 5 |") {
		t.Errorf("README section not replaced as expected:\n%.500s", s)
	}
}

// checkResidue checks that row's library went through its names, and what
// two libraries leave right after their releases: redlock's fencing
// counters, nothing from bsm/redislock.
// An acquisition sets its counter on the nodes that granted it, a quorum
// at least (a node whose request was cut under load may have none), so
// redlock leaves from a quorum's share to one key per name and node.
func checkResidue(t *testing.T, row report.MemoryRow, names int64) {
	t.Helper()
	quorumShare := float64(row.Nodes/2+1) / float64(row.Nodes)
	granted := float64(names-row.Errors) / float64(names)
	switch {
	case row.NA != "" || row.Errors*maxErrorShare > names:
		t.Errorf("%s: not run (%s) or %d errors (last: %s)", row.Library, row.NA, row.Errors, row.LastError)
	case row.Library == "redlock/goredis" && (row.KeysPerNameAfterRelease < quorumShare*granted || row.KeysPerNameAfterRelease > 1):
		t.Errorf("%s: %.3f keys per name and node right after the release, want its fencing counter on %.3f to 1 (a quorum of the nodes at least)",
			row.Library, row.KeysPerNameAfterRelease, quorumShare*granted)
	case row.Library == "bsm/redislock" && row.KeysPerNameAfterRelease != 0:
		t.Errorf("%s: %.3f keys per name after its releases", row.Library, row.KeysPerNameAfterRelease)
	}
}
