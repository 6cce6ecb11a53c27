package observe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Exporter names, as OTEL_METRICS_EXPORTER and OTEL_TRACES_EXPORTER spell
// them.
const (
	None       = "none"
	Prometheus = "prometheus"
	OTLP       = "otlp"
)

// The command's own environment variables that choose exporters and the
// Prometheus endpoint when the flags do not. Not OpenTelemetry's
// OTEL_METRICS_EXPORTER, OTEL_TRACES_EXPORTER and
// OTEL_EXPORTER_PROMETHEUS_HOST and _PORT: the command runs other programs,
// whose environment it shares, and those are most likely set for them. A
// Prometheus endpoint chosen by them took the port of the service that
// redlock run wrapped, and made every other redlock on the host exit 78.
const (
	EnvMetrics     = "REDLOCK_METRICS"
	EnvMetricsAddr = "REDLOCK_METRICS_ADDR"
	EnvTraces      = "REDLOCK_TRACES"
)

// OpenTelemetry's variables that say how to reach an OTLP collector, read
// once the flags or the command's own variables asked for OTLP.
const (
	envProtocol        = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envMetricsProtocol = "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"
	envTracesProtocol  = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

// defaultPrometheusAddr is where the Prometheus endpoint listens unless
// told: OpenTelemetry's default, on loopback only, so that nothing is
// exposed by accident.
const defaultPrometheusAddr = "localhost:9464"

// ErrEndpoint is the error Start returns, wrapped with the address and the
// cause, when the Prometheus endpoint cannot listen: the port is in use, or
// the host is not this machine's. It is a configuration error, as a bad
// node list is: no retry fixes it.
var ErrEndpoint = errors.New("cannot serve the Prometheus endpoint")

// shutdownTimeout bounds the final export of metrics and spans when the
// command exits: an unreachable collector must not hold the exit up.
const shutdownTimeout = 3 * time.Second

// Config chooses the exporters. Empty fields fall back to the command's own
// environment variables (EnvMetrics, EnvMetricsAddr, EnvTraces), then to
// none, and to defaultPrometheusAddr.
type Config struct {
	// Metrics is "none", "prometheus" or "otlp".
	Metrics string
	// PrometheusAddr is the host:port the Prometheus endpoint listens on.
	PrometheusAddr string
	// Traces is "none" or "otlp".
	Traces string
	// Errors, when not nil, is where failed exports are said, at most once
	// a minute for each kind of failure, each line starting with Prefix
	// ("redlock COMMAND").
	Errors io.Writer
	Prefix string
}

// Telemetry holds the providers the command hands to the library; a nil
// provider is off.
type Telemetry struct {
	MeterProvider  metric.MeterProvider
	TracerProvider trace.TracerProvider
	// PrometheusAddr is the address the Prometheus endpoint listens on,
	// "" when there is none.
	PrometheusAddr string
	shutdown       []func(context.Context) error
	// errors says failed exports; nil when Config.Errors was.
	errors *reporter
}

// Start sets up the exporters cfg chooses. ctx bounds their set-up only.
// It fails on an unknown exporter name, and with ErrEndpoint on a
// Prometheus endpoint that cannot listen.
func Start(ctx context.Context, cfg Config) (*Telemetry, error) {
	t := &Telemetry{}
	metrics, traces := choice(cfg.Metrics, EnvMetrics), choice(cfg.Traces, EnvTraces)
	if metrics == None && traces == None {
		return t, nil
	}
	res, err := newResource(ctx)
	if err != nil {
		return nil, err
	}
	if cfg.Errors != nil {
		// The exporters report the failures of background exports to
		// OpenTelemetry's one handler; the command has but one set of
		// exporters, so it is theirs.
		t.errors = &reporter{w: cfg.Errors, prefix: cfg.Prefix, said: map[string]time.Time{}}
		otel.SetErrorHandler(t.errors)
	}
	if err := t.startMetrics(ctx, metrics, cfg.PrometheusAddr, res); err != nil {
		t.Shutdown()
		return nil, err
	}
	if err := t.startTraces(ctx, traces, res); err != nil {
		t.Shutdown()
		return nil, err
	}
	return t, nil
}

// choice returns flag, else the environment variable env, else none,
// lower-cased.
func choice(flag, env string) string {
	if flag == "" {
		flag = os.Getenv(env)
	}
	if flag == "" {
		return None
	}
	return strings.ToLower(flag)
}

// newResource describes this process to the backends: service.name
// "redlock", whatever OTEL_SERVICE_NAME says (it names the program that
// redlock runs, most likely), with the attributes of
// OTEL_RESOURCE_ATTRIBUTES.
func newResource(ctx context.Context) (*resource.Resource, error) {
	return resource.New(ctx,
		resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost(),
		resource.WithAttributes(attribute.String("service.name", "redlock")))
}

// startMetrics sets up the metrics exporter named by exporter.
func (t *Telemetry) startMetrics(ctx context.Context, exporter, addr string, res *resource.Resource) error {
	var reader sdkmetric.Reader
	switch exporter {
	case None:
		return nil
	case Prometheus:
		r, err := t.servePrometheus(addr)
		if err != nil {
			return err
		}
		reader = r
	case OTLP:
		if err := checkProtocol(envMetricsProtocol); err != nil {
			return err
		}
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return fmt.Errorf("OTLP metrics exporter: %w", err)
		}
		reader = sdkmetric.NewPeriodicReader(exp)
	default:
		return fmt.Errorf("metrics exporter %q is not one of none, prometheus, otlp", exporter)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
	t.MeterProvider = mp
	t.shutdown = append(t.shutdown, mp.Shutdown)
	return nil
}

// servePrometheus starts the Prometheus text endpoint, /metrics on addr,
// over a registry of its own, and returns its reader.
func (t *Telemetry) servePrometheus(addr string) (sdkmetric.Reader, error) {
	from := "--metrics-addr"
	switch {
	case addr != "":
	case os.Getenv(EnvMetricsAddr) != "":
		addr, from = os.Getenv(EnvMetricsAddr), "$"+EnvMetricsAddr
	default:
		addr, from = defaultPrometheusAddr, "the default address"
	}
	reg := promclient.NewRegistry()
	exp, err := prometheus.New(prometheus.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) {
			err = op.Err // without the address, said before it
		}
		return nil, fmt.Errorf("%w on %s (%s): %w; give --metrics-addr a free host:port, or --metrics none",
			ErrEndpoint, addr, from, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.PrometheusAddr = ln.Addr().String()
	t.shutdown = append(t.shutdown, srv.Shutdown)
	return exp, nil
}

// checkProtocol fails when the OTLP protocol that the environment asks
// for, by the signal's variable else OTEL_EXPORTER_OTLP_PROTOCOL, is not
// the HTTP one the command speaks: otherwise every export would fail
// against a gRPC port.
func checkProtocol(signalVar string) error {
	name, p := signalVar, os.Getenv(signalVar)
	if p == "" {
		name, p = envProtocol, os.Getenv(envProtocol)
	}
	if p == "" || p == "http/protobuf" {
		return nil
	}
	return fmt.Errorf("%s=%s: this command exports OTLP over HTTP only (http/protobuf, port 4318)", name, p)
}

// startTraces sets up the span exporter named by exporter.
func (t *Telemetry) startTraces(ctx context.Context, exporter string, res *resource.Resource) error {
	switch exporter {
	case None:
		return nil
	case OTLP:
	default:
		return fmt.Errorf("traces exporter %q is not one of none, otlp", exporter)
	}
	if err := checkProtocol(envTracesProtocol); err != nil {
		return err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return fmt.Errorf("OTLP traces exporter: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t.TracerProvider = tp
	t.shutdown = append(t.shutdown, tp.Shutdown)
	return nil
}

// Shutdown exports what is left and stops the exporters and the endpoint,
// within shutdownTimeout. It returns the failures, and says them on
// Config.Errors.
func (t *Telemetry) Shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	var errs []error
	for i := len(t.shutdown) - 1; i >= 0; i-- {
		err := t.shutdown[i](ctx)
		t.errors.Handle(err)
		errs = append(errs, err)
	}
	t.shutdown = nil
	return errors.Join(errs...)
}
