package cli

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A Prometheus endpoint whose port is in use is a configuration error
// (78), said with the address, where it came from and the cause, before
// anything is locked or run; not a usage error (64) with a pointer to the
// help.
func TestRun_metricsPortInUse(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()

	says := func(t *testing.T, what string, r result, from string) {
		t.Helper()
		for _, want := range []string{addr, "address already in use", from, "--metrics none"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", what, want, r.stderr)
			}
		}
		if strings.Contains(r.stderr, "for usage") {
			t.Errorf("%s: a port in use is said as a usage error:\n%s", what, r.stderr)
		}
	}

	marker := filepath.Join(t.TempDir(), "ran")
	r := cli(t, "run", "--nodes", nodes, "--metrics", "prometheus", "--metrics-addr", addr, "job", "--", "touch", marker).
		expect(t, exitConfig, "run with the metrics port in use")
	says(t, "run", r, "(--metrics-addr)")
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the command ran")
	}
	for _, n := range cluster.Nodes() {
		if v := keyOn(t, n, "job"); v != "" {
			t.Errorf("node %d holds the job's lock: %q", n.Index(), v)
		}
	}

	var fail failureJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--metrics", "prometheus", "--metrics-addr", addr, "job").
		expect(t, exitConfig, "acquire --json with the metrics port in use").decode(t, &fail)
	if fail.Reason != failConfig || fail.ExitCode != exitConfig || !strings.Contains(fail.Error, "address already in use") {
		t.Errorf("acquire --json: %+v", fail)
	}
	r = cli(t, "doctor", "--nodes", nodes, "--metrics", "prometheus", "--metrics-addr", addr).
		expect(t, exitConfig, "doctor with the metrics port in use")
	says(t, "doctor", r, "(--metrics-addr)")

	t.Setenv("REDLOCK_METRICS_ADDR", addr)
	r = cli(t, "run", "--nodes", nodes, "--metrics", "prometheus", "job", "--", "touch", marker).
		expect(t, exitConfig, "run with the metrics port of the environment in use")
	says(t, "run, address from the environment", r, "($REDLOCK_METRICS_ADDR)")
}

// OpenTelemetry's variables are the wrapped program's: set for a service
// that serves its metrics on a port, they do not make redlock serve its own
// there, nor fail for the port the service took.
func TestRun_otelVariablesAreTheCommands(t *testing.T) {
	_, nodes := newCluster(t, 3)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	t.Setenv("OTEL_METRICS_EXPORTER", "prometheus")
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_PROMETHEUS_HOST", "127.0.0.1")
	t.Setenv("OTEL_EXPORTER_PROMETHEUS_PORT", port)
	marker := filepath.Join(t.TempDir(), "ran")
	cli(t, "run", "--nodes", nodes, "job", "--", "touch", marker).expect(t, exitOK, "run with the service's OTEL_* variables")
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the command did not run: %v", err)
	}
	cli(t, "list", "--nodes", nodes).expect(t, exitOK, "list with the service's OTEL_* variables")
}
