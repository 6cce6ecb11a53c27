package cli

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
)

// What a waiting command says of an attempt claims no count it cannot
// know: an attempt refused by a majority ends before the last node
// answers, so it counts "at least" the refusals it saw; and who holds the
// key is counted as 'redlock inspect' counts it, on every node.
func TestWait_saysNoCountItCannotKnow(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	client, err := goredis.Dial(bg, cluster.URLs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	attempt := func(key string, outcomes ...redlock.Outcome) *redlock.QuorumError {
		qe := &redlock.QuorumError{Op: "acquire", Key: key, Quorum: 2, Err: redlock.ErrNotAcquired}
		for i, o := range outcomes {
			qe.Nodes = append(qe.Nodes, redlock.NodeResult{Node: cluster.Addrs()[i], Outcome: o})
		}
		return qe
	}
	says := func(key string, qe *redlock.QuorumError, want string) {
		t.Helper()
		w := waiting{client: client, keys: []string{key}, stderr: io.Discard, cmd: "acquire"}
		if got := w.describe(bg, qe); !strings.HasPrefix(got, want) {
			t.Errorf("attempt %v on %q: says %q, want %q", qe.Nodes, key, got, want)
		}
	}
	held, noAnswer, recovering := redlock.OutcomeHeld, redlock.OutcomeNoAnswer, redlock.OutcomeRecovering

	// Nobody holds "free" any more when Inspect reads it.
	says("free", attempt("free", held, held, noAnswer), "held by another holder on at least 2 of 3 nodes")
	says("free", attempt("free", held, held, held), "held by another holder on 3 of 3 nodes")
	says("free", attempt("free", recovering, recovering, noAnswer), "at least 2 of 3 nodes recovering")

	var lock acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--ttl", "20s", "busy").expect(t, exitOK, "acquire busy").decode(t, &lock)
	deadline := time.Now().Add(5 * time.Second)
	for _, n := range cluster.Nodes() { // Acquire returned at a quorum
		for keyOn(t, n, "busy") != lock.Token {
			if time.Now().After(deadline) {
				t.Fatalf("node %d does not hold busy", n.Index())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	says("busy", attempt("busy", held, held, noAnswer), "held by another holder on 3 of 3 nodes (token "+lock.Token)

	// Once the waiting call has returned, the holder Inspect finds may be
	// the attempt that won it: nothing is said.
	for _, settled := range []bool{false, true} {
		var stderr strings.Builder
		w := waiting{client: client, keys: []string{"busy"}, stderr: &stderr, cmd: "acquire", began: time.Now()}
		w.settled.Store(settled)
		w.tell(bg, attempt("busy", held, held, noAnswer))
		if told := strings.Contains(stderr.String(), lock.Token); told == settled {
			t.Errorf("settled %v: told %q", settled, stderr.String())
		}
	}
}
