package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// An attempt that the end of the wait cut short before any node answered
// leaves the reason, and so the exit code, of the last attempt that nodes
// answered; one that a node answered becomes the reason.
func TestWait_cutShortAttemptKeepsTheLastReason(t *testing.T) {
	attempt := func(cause error, outcomes ...redlock.Outcome) error {
		qe := &redlock.QuorumError{Op: "acquire", Key: "k", Quorum: 2, Err: redlock.ErrNotAcquired, Cause: cause}
		for _, o := range outcomes {
			qe.Nodes = append(qe.Nodes, redlock.NodeResult{Node: "n", Outcome: o})
		}
		return qe
	}
	held := attempt(nil, redlock.OutcomeHeld, redlock.OutcomeHeld, redlock.OutcomeNoAnswer)
	w := waiting{last: held}
	cut := attempt(context.DeadlineExceeded, redlock.OutcomeTimeout, redlock.OutcomeTimeout, redlock.OutcomeNoAnswer)
	// The reason is the last answered attempt's, and the failure still
	// says that the wait ran out.
	keeps := func(what string, got, want error, f failure) {
		t.Helper()
		var qe *redlock.QuorumError
		if !errors.As(got, &qe) || qe != want || classify(got) != f {
			t.Errorf("%s: reason %v (%s), want %v (%s)", what, got, classify(got), want, f)
		}
		if summary, _ := failureLines(got); !strings.HasSuffix(summary[0], "(the wait ran out)") {
			t.Errorf("%s: failure %q does not say that the wait ran out", what, summary[0])
		}
	}
	keeps("cut short", w.reason(cut), held, failConflict)
	recovering := attempt(context.DeadlineExceeded, redlock.OutcomeRecovering, redlock.OutcomeRecovering, redlock.OutcomeTimeout)
	if got := w.reason(recovering); got != recovering || w.last != recovering {
		t.Errorf("answered: reason %v, last %v, want the answered attempt", got, w.last)
	}
	keeps("cut short after recovering nodes", w.reason(cut), recovering, failRecovering)
	unasked := attempt(context.DeadlineExceeded, redlock.OutcomeNotAsked, redlock.OutcomeNotAsked, redlock.OutcomeNotAsked)
	keeps("ended before any node was asked, after recovering nodes", w.reason(unasked), recovering, failRecovering)
}

// The reason a wait gives is what its report says: which nodes answer, in
// which order, and which were not waited for change at every attempt
// without changing it, and are not a new reason to report before
// progressRepeat.
func TestWait_reasonIgnoresWhichNodesAnsweredFirst(t *testing.T) {
	attempt := func(ok int, outcomes ...redlock.Outcome) *redlock.QuorumError {
		qe := &redlock.QuorumError{Op: "acquire", Key: "k", OK: ok, Quorum: 2, Err: redlock.ErrNotAcquired}
		for i, o := range outcomes {
			qe.Nodes = append(qe.Nodes, redlock.NodeResult{Node: string(rune('a' + i)), Outcome: o})
		}
		return qe
	}
	held, noAnswer, ok := redlock.OutcomeHeld, redlock.OutcomeNoAnswer, redlock.OutcomeOK
	down, recovering := redlock.OutcomeError, redlock.OutcomeRecovering
	for _, same := range [][2]*redlock.QuorumError{
		{attempt(0, held, held, noAnswer), attempt(0, held, noAnswer, held)},
		{attempt(0, held, held, held), attempt(0, noAnswer, held, held)},
		{attempt(1, ok, down, down), attempt(0, noAnswer, down, down)},
	} {
		if a, b := waitReason(same[0]), waitReason(same[1]); a != b {
			t.Errorf("one reason told as two: %q and %q", a, b)
		}
	}
	for _, other := range [][2]*redlock.QuorumError{
		{attempt(0, held, held, noAnswer), attempt(0, recovering, recovering, noAnswer)},
		{attempt(1, ok, down, down), attempt(1, down, ok, down)},
		{attempt(0, held, held, noAnswer), attempt(0, held, down, down)},
	} {
		if a, b := waitReason(other[0]), waitReason(other[1]); a == b {
			t.Errorf("two reasons told as one: %q", a)
		}
	}
}

// A command that waits behind a queue tells the new holder once the lock
// passed from the one it named to the next in line, at the next check,
// not only when its reason's kind changes.
func TestWait_tellsTheNextHolder(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	dir := t.TempDir()
	tokens, gate := filepath.Join(dir, "tokens"), filepath.Join(dir, "gate")
	var first acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "job").expect(t, exitOK, "acquire").decode(t, &first)

	// Both get a node timeout of a second: a release names the first two in
	// line, and the second tries one node timeout later (SAFETY.md,
	// Liveness, point 4), when a busy host may not have let the first try
	// yet; the last would then come first, and never wait for next.
	next := binaryCommand(nodes, "run", "--node-timeout", "1s", "--shell", "job", "--",
		`echo $REDLOCK_TOKEN >> `+tokens+`; while [ ! -e `+gate+` ]; do sleep 0.02; done`)
	nextErr := newLockedBuffer()
	next.Stderr = nextErr
	if err := next.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { next.Process.Kill() })
	waitForText(t, nextErr, "waiting for \"job\"", 10*time.Second)
	// The next in line, as the last command comes: a command prints that it
	// waits after its first attempt, which does not queue it.
	waitQueued(t, cluster, "job")

	last := binaryCommand(nodes, "run", "--node-timeout", "1s", "--wait", "60s", "job", "--", "true")
	lastErr := newLockedBuffer()
	last.Stderr = lastErr
	if err := last.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { last.Process.Kill() })
	waitForText(t, lastErr, "token "+first.Token, 10*time.Second)

	cli(t, "release", "--nodes", nodes, "job", first.Token).expect(t, exitOK, "release of the first holder")
	var nextToken string
	eventually(t, 10*time.Second, "the next holder runs", func() bool {
		b, _ := os.ReadFile(tokens)
		nextToken = strings.TrimSpace(string(b))
		return nextToken != ""
	})
	// Checked every progressCheck: the new holder is told at the next one.
	waitForText(t, lastErr, "token "+nextToken, progressCheck+10*time.Second)

	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := waitTimeout(next, 20*time.Second); err != nil {
		t.Errorf("the next holder's run: %v\n%s", err, nextErr)
	}
	if err := waitTimeout(last, 20*time.Second); err != nil {
		t.Errorf("the last run: %v\n%s", err, lastErr)
	}
}

// lockedBuffer is a bytes.Buffer safe to read while a command writes it,
// through the lockedWriter that the command's own logs use.
type lockedBuffer struct {
	lockedWriter
	b bytes.Buffer
}

func newLockedBuffer() *lockedBuffer {
	l := &lockedBuffer{}
	l.w = &l.b
	return l
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitForText waits up to timeout for text to appear in b.
func waitForText(t *testing.T, b *lockedBuffer, text string, timeout time.Duration) {
	t.Helper()
	for end := time.Now().Add(timeout); !strings.Contains(b.String(), text); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("waited %s for %q in stderr:\n%s", timeout, text, b)
		}
	}
}

// eventually polls cond every 20 ms until it holds, failing the test with
// what after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(timeout); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("waited %s for %s", timeout, what)
		}
	}
}

// A command that waits keeps its place in the key's queue for the whole
// wait: its entry keeps the score it entered with past a progress check,
// and it runs before a command that came to wait later. Before, each
// check ended one Acquire and began another, which gave up the place and
// queued again at the back, so that a later waiter could go first.
func TestWait_keepsItsPlaceInLinePastAProgressCheck(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	order := filepath.Join(t.TempDir(), "order")
	var first acquiredJSON
	// Held until its release below, past a progress check and two starts.
	cli(t, "acquire", "--nodes", nodes, "--json", "--ttl", "30s", "line").expect(t, exitOK, "acquire").decode(t, &first)

	start := func(name string) (*exec.Cmd, *lockedBuffer) {
		// A release names the first two in line, and the second tries one
		// node timeout after the first: a long one, so that the first has
		// tried by then on a busy host too.
		cmd := binaryCommand(nodes, "run", "--node-timeout", "1s", "--shell", "line", "--", "echo "+name+" >> "+order)
		stderr := newLockedBuffer()
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		waitForText(t, stderr, "waiting for \"line\"", 10*time.Second)
		return cmd, stderr
	}
	early, earlyErr := start("early")
	entered := waitQueued(t, cluster, "line")
	// Not a wait for an event: the early command must pass a progress
	// check while it waits, which only time brings.
	time.Sleep(progressCheck + time.Second)
	if got := queuePlaces(cluster, "line"); got[entered] < 2 {
		t.Fatalf("the early command's place %q is no longer on a quorum after a progress check: %v", entered, got)
	}
	late, lateErr := start("late")

	cli(t, "release", "--nodes", nodes, "line", first.Token).expect(t, exitOK, "release of the first holder")
	if err := waitTimeout(early, 20*time.Second); err != nil {
		t.Errorf("the early run: %v\n%s", err, earlyErr)
	}
	if err := waitTimeout(late, 20*time.Second); err != nil {
		t.Errorf("the late run: %v\n%s", err, lateErr)
	}
	if b, _ := os.ReadFile(order); string(b) != "early\nlate\n" {
		t.Errorf("ran in the order %q, want early then late", b)
	}
}

// queuePlaces counts, for each content of the key's queue, the nodes of
// cluster whose queue holds just that: one waiter's entry and its score.
func queuePlaces(cluster *redlocktest.Cluster, key string) map[string]int {
	seen := map[string]int{}
	for _, n := range cluster.Nodes() {
		if v, err := n.Do(bg, "ZRANGE", "redlock:queue:"+key, "0", "-1", "WITHSCORES"); err == nil && v != "" {
			seen[v]++
		}
	}
	return seen
}

// waitQueued waits until one waiter, alone in the key's queue, is queued on
// a quorum of cluster's nodes, and returns its entry: a waiter that comes
// later is then behind it on a quorum.
func waitQueued(t *testing.T, cluster *redlocktest.Cluster, key string) string {
	t.Helper()
	var entered string
	eventually(t, 10*time.Second, "the first waiter is queued on a quorum", func() bool {
		for place, n := range queuePlaces(cluster, key) {
			if n >= len(cluster.Nodes())/2+1 {
				entered = place
				return true
			}
		}
		return false
	})
	return entered
}

// A --wait bounds the check of the nodes too: dial's context ends at the
// wait's end, counted from the command's start, but gives the check at
// least minCheck. Before, the check took up to its own 3 s on nodes that
// did not answer, and the wait began after it.
func TestWait_boundsTheCheckOfTheNodes(t *testing.T) {
	var n nodeFlags
	ctx, cancel := n.checkContext(bg)
	if _, ok := ctx.Deadline(); ok {
		t.Error("without a wait, the check has a deadline of its own")
	}
	cancel()
	n.checkBy = time.Now().Add(time.Hour)
	ctx, cancel = n.checkContext(bg)
	if d, _ := ctx.Deadline(); !d.Equal(n.checkBy) {
		t.Errorf("the check ends at %v, want the wait's end %v", d, n.checkBy)
	}
	cancel()
	before := time.Now()
	n.checkBy = before.Add(-time.Second) // spent already
	ctx, cancel = n.checkContext(bg)
	if d, _ := ctx.Deadline(); d.Before(before.Add(minCheck)) {
		t.Errorf("a spent wait gives the check %v, want at least %v", d.Sub(before), minCheck)
	}
	cancel()
}

// -n (--wait 0) bounds the check of the nodes as a --wait does, to
// minCheck: a node that does not answer is left out of the check then,
// not waited for until the client library's own read timeout (a second),
// and the PING's deadline, not the library's timeout, is what it says.
// Both a silent node's PING and the library's read timeout end later than
// the check's bound, whatever the load.
func TestWait_noWaitBoundsTheCheckOfTheNodes(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	if err := cluster.Node(2).Pause(); err != nil {
		t.Fatal(err)
	}
	defer cluster.Node(2).Resume()
	// A node timeout of a second, so that the one attempt of -n is granted
	// by the two other nodes on a busy host.
	for _, args := range [][]string{
		{"acquire", "--nodes", nodes, "--node-timeout", "1s", "-n", "job"},
		{"run", "--nodes", nodes, "--node-timeout", "1s", "-n", "job2", "--", "true"},
	} {
		r := cli(t, args...).expect(t, exitOK, strings.Join(args, " ")+" with a node paused")
		if !strings.Contains(r.stderr, "no answer to PING within the check") {
			t.Errorf("%s: the check waited past its bound for the paused node:\n%s", args[0], r.stderr)
		}
	}
}

// Runs of several keys whose sets overlap run in the order they came: a
// later run finds a key of the earlier one's set free, but defers to its
// place there. Before, a run's first attempt was TryAcquireAll's, which
// defers to no set's place, so that 'run b c' took b while 'run a b'
// waited for a, and ran first.
func TestWait_overlappingSetsRunInTheOrderTheyCame(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	order := filepath.Join(t.TempDir(), "order")
	var first acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "a").expect(t, exitOK, "acquire").decode(t, &first)

	start := func(name string, keys ...string) (*exec.Cmd, *lockedBuffer) {
		args := append(append([]string{"run", "--shell"}, keys...), "--", "echo "+name+" >> "+order)
		cmd := binaryCommand(nodes, args...)
		stderr := newLockedBuffer()
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		return cmd, stderr
	}
	early, earlyErr := start("early", "a", "b")
	waitForText(t, earlyErr, "waiting for", 10*time.Second)
	// Its place in the queue of b, the key it is not refused, comes with
	// its second attempt.
	waitQueued(t, cluster, "b")
	late, lateErr := start("late", "b", "c")
	waitForText(t, lateErr, "waiting for", 10*time.Second)

	cli(t, "release", "--nodes", nodes, "a", first.Token).expect(t, exitOK, "release of the first holder")
	if err := waitTimeout(early, 20*time.Second); err != nil {
		t.Errorf("the early run: %v\n%s", err, earlyErr)
	}
	if err := waitTimeout(late, 20*time.Second); err != nil {
		t.Errorf("the late run: %v\n%s", err, lateErr)
	}
	if b, _ := os.ReadFile(order); string(b) != "early\nlate\n" {
		t.Errorf("ran in the order %q, want early then late\nearly:\n%s\nlate:\n%s", b, earlyErr, lateErr)
	}
}

// A waiter for a set of keys behind a client queued before it, on nodes
// that vote and a key nobody holds, says that the key is free but kept for
// that client, not that another holder has it. The client queued first is
// written into the key's queue, live for a minute, and never takes the
// key. (An election's candidate second in line says so too; while the
// nodes recover, it says that they recover: see the library's
// TestElection_secondCandidateHearsTheNodesRecover.)
func TestWait_setBehindAnEarlierClientSaysTheKeyIsFree(t *testing.T) {
	cluster, nodes := newCluster(t, 1)
	deadline := strconv.FormatInt(time.Now().Add(time.Minute).UnixMicro(), 10)
	for _, cmd := range [][]string{
		{"ZADD", "redlock:queue:svc", "1", "earlier-client"},
		{"HSET", "redlock:queue-until:svc", "earlier-client", deadline},
		{"SET", "redlock:waiting:svc", "1", "PX", "60000"},
	} {
		if _, err := cluster.Node(0).Do(bg, cmd...); err != nil {
			t.Fatal(err)
		}
	}
	r := cli(t, "acquire", "--nodes", nodes, "--wait", "2s", "svc", "other").expect(t, exitConflict, "acquire behind an earlier client")
	if !strings.Contains(r.stderr, `"svc" free, but kept for the clients queued before this one`) {
		t.Errorf("the waiter does not say the key is kept for the client before it:\n%s", r.stderr)
	}
}
