package cli

import (
	"os/exec"
	"strings"
	"testing"
)

func TestDemo(t *testing.T) {
	r := cli(t, "demo", "--duration", "3s").expect(t, exitOK, "demo")
	for _, want := range []string{
		"killed nodes 4 and 5",
		"node 5 is back, empty",
		"PASS  the lock was acquired",
		"PASS  at most one holder at a time (most seen at once: 1)",
		"PASS  no lost updates",
		"PASS  fencing tokens strictly increasing",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "FAIL") {
		t.Errorf("a check failed:\n%s", r.stdout)
	}
}

func TestDemo_realNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server processes for a few seconds")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server is not on PATH: %v", err)
	}
	r := cli(t, "demo", "--real", "--duration", "2s", "--workers", "2").expect(t, exitOK, "demo --real")
	if !strings.Contains(r.stdout, "redis-server processes") || !strings.Contains(r.stdout, "PASS  no lost updates") {
		t.Errorf("demo --real output:\n%s", r.stdout)
	}
}
