package faults_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/torture/faults"
)

// serverTime returns the node's TIME.
func serverTime(t *testing.T, n *redlocktest.Node) time.Time {
	t.Helper()
	reply, err := n.Do(t.Context(), "TIME")
	if err != nil {
		t.Fatal(err)
	}
	sec, usec, _ := strings.Cut(reply, "\n")
	s, _ := strconv.ParseInt(sec, 10, 64)
	us, _ := strconv.ParseInt(usec, 10, 64)
	return time.Unix(s, us*1000)
}

// TestClockShim_jumpAndSkewMoveRedisClock checks that the clock shim moves
// the TIME and the expiry of one node only, by a jump and by a skew, and
// that CheckClock notices a node started without it.
func TestClockShim_jumpAndSkewMoveRedisClock(t *testing.T) {
	t.Parallel()
	shim, err := faults.BuildClockShim(t.Context(), t.TempDir(), "redis-server")
	if errors.Is(err, faults.ErrNoCompiler) {
		t.Fatalf("%v: install gcc (apt-get install -y gcc) to run the clock scenarios", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	c := redlocktest.Start(t, redlocktest.Options{Nodes: 2, ServerPath: shim.ServerPath()})
	n, other := c.Node(0), c.Node(1)
	if d := time.Until(serverTime(t, n)); d < -time.Second || d > time.Second {
		t.Fatalf("unshifted clock is %v off", d)
	}
	if _, err := n.Do(t.Context(), "SET", "k", "v", "PX", "100000"); err != nil {
		t.Fatal(err)
	}
	checkJump(t, shim, n, other)
	if err := shim.Jump(n, -time.Hour); err != nil {
		t.Fatal(err)
	}
	checkSkew(t, shim, n)
	checkShimNotInEffect(t, shim)
}

// checkJump moves the clock of n an hour ahead and checks that its TIME
// and its expiry of the key k, set for 100 s, follow, and that the clock of
// other does not.
func checkJump(t *testing.T, shim *faults.ClockShim, n, other *redlocktest.Node) {
	t.Helper()
	if err := shim.Jump(n, time.Hour); err != nil {
		t.Fatal(err)
	}
	if d := time.Until(serverTime(t, n)); d < time.Hour-time.Second || d > time.Hour+time.Second {
		t.Fatalf("after a jump of 1h the clock is %v ahead", d)
	}
	if err := shim.CheckClock(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	// Redis expires keys by this clock: the 100 s key is gone.
	if reply, err := n.Do(t.Context(), "GET", "k"); !errors.Is(err, redlocktest.ErrNil) {
		t.Fatalf("GET k after the jump = %q, %v; want nil", reply, err)
	}
	// The other node's clock did not move.
	if d := time.Until(serverTime(t, other)); d > time.Second {
		t.Fatalf("the other node's clock moved by %v", d)
	}
}

// checkSkew makes the clock of n run 50% fast and checks that its TIME
// does.
func checkSkew(t *testing.T, shim *faults.ClockShim, n *redlocktest.Node) {
	t.Helper()
	if err := shim.Skew(n, 500_000); err != nil { // 50% fast
		t.Fatal(err)
	}
	before, t0 := serverTime(t, n), time.Now()
	time.Sleep(200 * time.Millisecond)
	ran, real := serverTime(t, n).Sub(before), time.Since(t0)
	if ratio := float64(ran) / float64(real); ratio < 1.3 || ratio > 1.7 {
		t.Fatalf("with +50%% skew the clock ran %v in %v (ratio %.2f), want about 1.5", ran, real, ratio)
	}
	if err := shim.CheckClock(t.Context(), n); err != nil {
		t.Fatal(err)
	}
}

// checkShimNotInEffect checks that CheckClock notices a node started
// without the shim.
func checkShimNotInEffect(t *testing.T, shim *faults.ClockShim) {
	t.Helper()
	c2 := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := shim.Jump(c2.Node(0), time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := shim.CheckClock(ctx, c2.Node(0)); err == nil {
		t.Fatal("CheckClock passed on a node started without the shim")
	}
}
