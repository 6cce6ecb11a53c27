// Package observe sets up what the redlock command tells an operator beyond
// its own output: the library's log records on stderr at a chosen level,
// and its OpenTelemetry metrics and traces, exported as the flags or the
// command's own REDLOCK_* environment variables say (not OpenTelemetry's,
// which belong to the program redlock runs): metrics as Prometheus text on
// a local port, or over OTLP; traces over OTLP.
//
// Nothing here is global: the providers are handed to the library through
// redlock.Options, and Shutdown flushes and stops them.
package observe
