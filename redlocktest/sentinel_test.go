package redlocktest_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
)

// A Sentinel gives the master it monitors, finds its replica and, once
// the master is killed, promotes the replica: WaitMaster returns when the
// Sentinel gives the replica's address.
func TestSentinel_failsMasterOver(t *testing.T) {
	master := redlocktest.Start(t, redlocktest.Options{Nodes: 1}).Node(0)
	replica := redlocktest.Start(t, redlocktest.Options{Nodes: 1,
		Config: []string{"replicaof 127.0.0.1 " + strconv.Itoa(master.Port())}}).Node(0)
	s := redlocktest.StartSentinel(t, redlocktest.SentinelOptions{Masters: map[string]int{"locks": master.Port()}})
	if got, err := s.MasterAddr(t.Context(), "locks"); err != nil || got != master.Addr() {
		t.Fatalf("MasterAddr = %q, %v; want %s", got, err, master.Addr())
	}
	if want := "redis://" + s.Addr() + "?master_name=locks"; s.URL("locks") != want {
		t.Errorf("URL = %q, want %q", s.URL("locks"), want)
	}
	if _, err := s.MasterAddr(t.Context(), "other"); !errors.Is(err, redlocktest.ErrNil) {
		t.Errorf("MasterAddr of a name not monitored: %v, want ErrNil", err)
	}
	// The Sentinel must know of the replica before the master dies.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if reply, _ := s.Do(t.Context(), "SENTINEL", "REPLICAS", "locks"); strings.Contains(reply, replica.Addr()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Sentinel did not find the replica within 10 s")
		}
	}
	if err := master.Kill(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := s.WaitMaster(t.Context(), "locks", replica.Addr()); err != nil {
		t.Fatal(err)
	}
	t.Logf("the replica was promoted %v after the kill", time.Since(began).Round(time.Millisecond))
	if role, err := replica.Do(t.Context(), "ROLE"); err != nil || !strings.HasPrefix(role, "master") {
		t.Errorf("the promoted replica's ROLE is %q, %v; want master", role, err)
	}
}

// A Sentinel with a password refuses commands without it; Do and URL
// carry it. Extra lines go into sentinel.conf after the monitor lines,
// and Close removes the Sentinel's directory.
func TestSentinel_passwordAndConfig(t *testing.T) {
	master := redlocktest.Start(t, redlocktest.Options{Nodes: 1, Password: "master-pw"}).Node(0)
	s, err := redlocktest.NewSentinel(t.Context(), redlocktest.SentinelOptions{
		Masters:  map[string]int{"locks": master.Port()},
		Password: "sentinel pw",
		Config:   []string{"sentinel auth-pass locks master-pw"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if want := "redis://:sentinel%20pw@" + s.Addr() + "?master_name=locks"; s.URL("locks") != want {
		t.Errorf("URL = %q, want %q", s.URL("locks"), want)
	}
	if got, err := s.MasterAddr(t.Context(), "locks"); err != nil || got != master.Addr() {
		t.Errorf("MasterAddr = %q, %v; want %s", got, err, master.Addr())
	}
	conf, err := os.ReadFile(filepath.Join(s.Dir(), "sentinel.conf"))
	if err != nil || !strings.Contains(string(conf), "auth-pass locks master-pw") {
		t.Errorf("sentinel.conf lacks the extra line (%v):\n%s", err, conf)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the Sentinel's directory is still there after Close: %v", err)
	}
}

// NewSentinel without a binary fails with a message that says how to
// install one; without masters it fails before looking.
func TestSentinel_startErrors(t *testing.T) {
	_, err := redlocktest.NewSentinel(t.Context(), redlocktest.SentinelOptions{
		Masters: map[string]int{"locks": 1}, SentinelPath: filepath.Join(t.TempDir(), "redis-sentinel")})
	if err == nil || !strings.Contains(err.Error(), "apt-get install -y redis-sentinel") {
		t.Errorf("NewSentinel without a binary: %v, want how to install it", err)
	}
	if _, err := redlocktest.NewSentinel(t.Context(), redlocktest.SentinelOptions{}); err == nil {
		t.Error("NewSentinel without masters succeeded")
	}
}
