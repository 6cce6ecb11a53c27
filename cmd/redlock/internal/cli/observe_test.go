package cli

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// freeAddr returns a loopback address with a port nobody listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// A running 'redlock run --metrics prometheus' serves the library's metrics
// on its endpoint, as an operator's Prometheus would scrape them.
func TestRun_prometheusScrapeWhileTheCommandRuns(t *testing.T) {
	_, nodes := newCluster(t, 3)
	addr := freeAddr(t)
	started := filepath.Join(t.TempDir(), "started")
	cmd := binaryCommand(nodes, "run", "--metrics", "prometheus", "--metrics-addr", addr, "--ttl", "3s",
		"job", "--", "sh", "-c", "echo >"+started+"; sleep 3")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	waitForFile(t, started, 10*time.Second)
	time.Sleep(1500 * time.Millisecond) // a renewal, at a third of the TTL

	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`(?m)^redlock_acquisitions_total\{[^}]*redlock_outcome="acquired"[^}]*\} 1$`,
		`(?m)^redlock_locks_held(_ratio)?\{[^}]*\} 1$`,
		`(?m)^redlock_extensions_total\{[^}]*redlock_call="renew"[^}]*redlock_outcome="extended"[^}]*\} [1-9]`,
		`(?m)^redlock_node_requests_total\{[^}]*redlock_node="127\.0\.0\.1:\d+"[^}]*redlock_op="acquire"[^}]*\} 1$`,
		`(?m)^redlock_acquire_duration_seconds_bucket\{`,
		`service_name="redlock"`,
	} {
		if !regexp.MustCompile(want).Match(body) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("redlock run: %v", err)
	}
}
