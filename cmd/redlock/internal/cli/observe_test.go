package cli

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
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

// collector is an OTLP/HTTP endpoint that keeps what it is sent, by path.
type collector struct {
	mu       sync.Mutex
	received map[string][]byte
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.received[r.URL.Path] = append(c.received[r.URL.Path], body...)
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
}

// sent returns what was sent to path.
func (c *collector) sent(path string) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.received[path]
}

// 'redlock acquire --metrics otlp --traces otlp' pushes the library's
// metrics and its span to the collector the standard OTEL_EXPORTER_OTLP_*
// variables name, before it exits; the same choice through
// REDLOCK_METRICS and REDLOCK_TRACES without the flags.
func TestAcquire_otlpExportsMetricsAndSpans(t *testing.T) {
	_, nodes := newCluster(t, 3)
	for _, tc := range []struct {
		name string
		args []string
		env  []string
	}{
		{"flags", []string{"--metrics", "otlp", "--traces", "otlp"}, nil},
		{"environment", nil, []string{"REDLOCK_METRICS=otlp", "REDLOCK_TRACES=otlp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &collector{received: map[string][]byte{}}
			srv := httptest.NewServer(c)
			defer srv.Close()
			cmd := binaryCommand(nodes, append(append([]string{"acquire"}, tc.args...), "--wait", "0", "job-"+tc.name)...)
			cmd.Env = append(cmd.Env, append(tc.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+srv.URL)...)
			var stdout, stderr bytes.Buffer // the token goes somewhere: no warning of its loss
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("redlock acquire: %v\n%s", err, stderr.String())
			}
			for path, want := range map[string]string{
				"/v1/metrics": "redlock.acquisitions",
				"/v1/traces":  "redlock.acquire",
			} {
				if !bytes.Contains(c.sent(path), []byte(want)) {
					t.Errorf("%s lacks %s (%d bytes sent)", path, want, len(c.sent(path)))
				}
			}
			if stderr.Len() > 0 {
				t.Errorf("stderr:\n%s", stderr.String())
			}
		})
	}
}

// An OTLP collector that cannot be reached costs the command nothing but a
// line on stderr for the metrics and one for the spans, each in the
// command's own words: it still takes the lock and exits 0.
func TestAcquire_otlpCollectorDownIsSaidOnce(t *testing.T) {
	_, nodes := newCluster(t, 3)
	cmd := binaryCommand(nodes, "acquire", "--metrics", "otlp", "--traces", "otlp", "--wait", "0", "job")
	cmd.Env = append(cmd.Env, "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+freeAddr(t))
	var stdout, stderr bytes.Buffer // the token goes somewhere: no warning of its loss
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("redlock acquire: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want a line for the metrics and one for the spans, got:\n%s", stderr.String())
	}
	for _, what := range []string{"metrics", "traces"} {
		said := 0
		for _, l := range lines {
			if strings.HasPrefix(l, "redlock acquire: telemetry not exported: ") && strings.Contains(l, what) {
				said++
			}
		}
		if said != 1 {
			t.Errorf("%d lines say, as the command, that the %s were not exported:\n%s", said, what, stderr.String())
		}
	}
}
