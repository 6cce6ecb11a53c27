package history_test

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/torture/history"
)

// TestRecorder_roundTripAndPairing checks that a recorder writes every
// event appended, one a line, tells its subscribers, and that the history
// read back is sorted by time and pairs operations and faults.
func TestRecorder_roundTripAndPairing(t *testing.T) {
	var buf bytes.Buffer
	rec := history.NewRecorder(&buf)
	grants, cancel := rec.Subscribe(func(ev history.Event) bool { return ev.Type == history.OK && ev.Op == history.OpAcquire })
	defer cancel()
	appendSample(rec)
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	if ev := <-grants; ev.Fence != 7 {
		t.Fatalf("subscriber got %+v", ev)
	}
	if n := strings.Count(buf.String(), "\n"); n != 6 {
		t.Fatalf("%d lines written, want 6:\n%s", n, buf.String())
	}
	events, err := history.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(events); i++ {
		if events[i].Time < events[i-1].Time {
			t.Fatalf("Read did not sort: %v then %v", events[i-1].Time, events[i].Time)
		}
	}
	checkPairing(t, events)
}

// appendSample appends to rec, out of time order as events from pipes
// arrive, six events: worker-0's acquire completed with fence 7 and
// deadline 500, worker-1's pending, a kill of n1 from 25 to 40 and a clock
// jump of n2 at 45.
func appendSample(rec *history.Recorder) {
	id := rec.NextID(history.ProcNemesis)
	rec.Append(history.Event{Time: 30, Process: "worker-0", Type: history.OK, Op: history.OpAcquire, ID: 1, Token: "t", Fence: 7, Deadline: 500})
	rec.Append(history.Event{Time: 10, Process: "worker-0", Type: history.Invoke, Op: history.OpAcquire, ID: 1})
	rec.Append(history.Event{Time: 20, Process: "worker-1", Type: history.Invoke, Op: history.OpAcquire, ID: 1})
	rec.Append(history.Event{Time: 25, Process: history.ProcNemesis, Type: history.Start, Op: "kill", ID: id, Target: "n1"})
	rec.Append(history.Event{Time: 40, Process: history.ProcNemesis, Type: history.End, Op: "kill", ID: id, Target: "n1", Detail: "restarted"})
	rec.Append(history.Event{Time: 45, Process: history.ProcNemesis, Type: history.Info, Op: "clock-jump", ID: id + 1, Target: "n2"})
}

// checkPairing checks that the events of appendSample pair into its two
// operations and its two faults.
func checkPairing(t *testing.T, events []history.Event) {
	t.Helper()
	ops := history.Ops(events)
	if len(ops) != 2 || !ops[0].OK() || ops[0].Completed.Deadline != 500 || ops[1].Done() {
		t.Fatalf("Ops = %+v; want worker-0's acquire completed and worker-1's pending", ops)
	}
	faults := history.Faults(events)
	if len(faults) != 2 || faults[0].Start != 25 || faults[0].End != 40 || faults[0].Detail != "; restarted" ||
		faults[1].Start != 45 || faults[1].End != 45 {
		t.Fatalf("Faults = %+v", faults)
	}
}

// TestNow_sharedAcrossProcesses checks that a child process reads the same
// clock: its reading falls between two readings taken around it here.
func TestNow_sharedAcrossProcesses(t *testing.T) {
	if os.Getenv("HISTORY_PRINT_NOW") != "" {
		os.Stdout.WriteString(strconv.FormatInt(history.Now(), 10))
		os.Exit(0)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestNow_sharedAcrossProcesses$")
	cmd.Env = append(os.Environ(), "HISTORY_PRINT_NOW=1")
	before := history.Now()
	out, err := cmd.Output()
	after := history.Now()
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatalf("child printed %q: %v", out, err)
	}
	if child < before || child > after {
		t.Fatalf("child's clock %d is outside [%d, %d]", child, before, after)
	}
}
