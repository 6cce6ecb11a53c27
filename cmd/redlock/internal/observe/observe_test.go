package observe

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestStart_prometheusServesWhatIsRecorded(t *testing.T) {
	tel, err := Start(context.Background(), Config{Metrics: Prometheus, PrometheusAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown()
	if tel.TracerProvider != nil {
		t.Error("traces are on without being asked for")
	}
	counter, err := tel.MeterProvider.Meter("test").Int64Counter("test.things")
	if err != nil {
		t.Fatal(err)
	}
	counter.Add(context.Background(), 3)
	body := scrape(t, tel.PrometheusAddr)
	if !strings.Contains(body, "test_things_total") || !strings.Contains(body, `service_name="redlock"`) {
		t.Errorf("/metrics lacks the counter or the service name:\n%s", body)
	}
}

// The command's own variables choose the exporters and the endpoint;
// OpenTelemetry's, set for the program redlock runs, choose nothing, and
// OTEL_SERVICE_NAME does not rename the command.
func TestStart_environmentChoosesAndBadNamesFail(t *testing.T) {
	t.Setenv("OTEL_METRICS_EXPORTER", "prometheus")
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_PROMETHEUS_HOST", "127.0.0.1")
	t.Setenv("OTEL_EXPORTER_PROMETHEUS_PORT", "0")
	t.Setenv("OTEL_SERVICE_NAME", "the-wrapped-service")
	tel, err := Start(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if tel.MeterProvider != nil || tel.TracerProvider != nil || tel.PrometheusAddr != "" {
		t.Errorf("OTEL_METRICS_EXPORTER and OTEL_TRACES_EXPORTER alone: provider %v and %v, endpoint %q; want none",
			tel.MeterProvider, tel.TracerProvider, tel.PrometheusAddr)
	}
	tel.Shutdown()

	t.Setenv(EnvMetrics, "prometheus")
	t.Setenv(EnvMetricsAddr, "127.0.0.1:0")
	tel, err = Start(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if tel.MeterProvider == nil || !strings.HasPrefix(tel.PrometheusAddr, "127.0.0.1:") {
		t.Errorf("%s=prometheus: provider %v, endpoint %q", EnvMetrics, tel.MeterProvider, tel.PrometheusAddr)
	}
	counter, err := tel.MeterProvider.Meter("test").Int64Counter("test.things")
	if err != nil {
		t.Fatal(err)
	}
	counter.Add(context.Background(), 1)
	if body := scrape(t, tel.PrometheusAddr); !strings.Contains(body, `service_name="redlock"`) {
		t.Errorf("/metrics names another service than redlock:\n%s", body)
	}
	tel.Shutdown()

	if tel, err := Start(context.Background(), Config{Metrics: None}); err != nil || tel.MeterProvider != nil {
		t.Errorf("--metrics none over the environment: %v, %v", tel, err)
	}
	for _, cfg := range []Config{{Metrics: "statsd"}, {Traces: "zipkin"}} {
		if _, err := Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "is not one of") {
			t.Errorf("Start(%+v) = %v, want an unknown-exporter error", cfg, err)
		}
	}
}

func TestNewLogger_levels(t *testing.T) {
	var buf bytes.Buffer
	log, err := NewLogger(&buf, "warn", false)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hidden")
	log.Warn("shown", "node", "127.0.0.1:6379")
	if out := buf.String(); strings.Contains(out, "hidden") || !strings.Contains(out, "level=WARN msg=shown node=127.0.0.1:6379") {
		t.Errorf("warn level wrote:\n%s", out)
	}
	if _, err := NewLogger(&buf, "loud", false); err == nil {
		t.Error("NewLogger accepted level loud")
	}
}

// scrape returns the text of http://addr/metrics.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A failing exporter is said once, then not again within reportEvery; a
// failure of another kind is said at once.
func TestReporter_saysEachKindOnceAMinute(t *testing.T) {
	var buf bytes.Buffer
	r := &reporter{w: &buf, prefix: "redlock run", said: map[string]time.Time{}}
	for range 3 {
		r.Handle(errors.New("traces export: connection refused"))
	}
	r.Handle(errors.New("failed to upload metrics: connection refused"))
	r.Handle(nil)
	want := "redlock run: telemetry not exported: traces export: connection refused\n" +
		"redlock run: telemetry not exported: failed to upload metrics: connection refused\n"
	if buf.String() != want {
		t.Errorf("said:\n%swant:\n%s", buf.String(), want)
	}
}

// OTLP is exported over HTTP: an environment that asks for gRPC is refused
// at the start rather than failing every export.
func TestStart_otlpOverGRPCIsRefused(t *testing.T) {
	for _, env := range []string{envProtocol, envMetricsProtocol, envTracesProtocol} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "grpc")
			_, err := Start(context.Background(), Config{Metrics: OTLP, Traces: OTLP})
			if err == nil || !strings.Contains(err.Error(), env+"=grpc") {
				t.Errorf("Start with %s=grpc: %v", env, err)
			}
		})
	}
	t.Setenv(envProtocol, "http/protobuf")
	tel, err := Start(context.Background(), Config{Metrics: OTLP, Traces: OTLP})
	if err != nil {
		t.Fatalf("Start with http/protobuf: %v", err)
	}
	tel.Shutdown()
}
