package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/cmd/redlock/internal/observe"
	"github.com/redlock-go/redlock/goredis"
)

// defaultNodes is the node list when neither --nodes nor REDLOCK_NODES is
// given: one Redis on this host's default port. The tests point it at a
// node of their own.
var defaultNodes = "redis://127.0.0.1:6379"

// envNodes names the environment variable that lists the nodes.
const envNodes = "REDLOCK_NODES"

// The library's defaults (see redlock.Options), which the flags' defaults
// repeat so that the help states them.
const (
	defaultTTL           = 10 * time.Second
	defaultNodeTimeout   = 50 * time.Millisecond
	defaultRecoveryDelay = 30 * time.Second
)

// minTTL is the shortest --ttl any command accepts: a lock that a script
// takes with 'redlock acquire' must outlive the start of the process that
// extends or releases it, and 'redlock run' stops its command
// max(TTL/10, 100ms) before the deadline, which must leave the command
// most of the TTL.
const minTTL = 500 * time.Millisecond

// minNodeTimeout is the shortest --node-timeout any command accepts, the
// library's (Options.NodeTimeout): below it no node answers in time.
const minNodeTimeout = time.Millisecond

// retryFloor is the first pause between attempts to acquire; pauses double
// from it up to --retry-delay, each drawn at random between half and all of
// it, so that contenders do not retry in lock step.
const retryFloor = 10 * time.Millisecond

// defaultRetryDelay is --retry-delay's default, the ceiling of the
// library's default retry strategy: waiting longer between attempts costs a waiter up to
// that much latency after a release, retrying sooner costs the nodes load.
const defaultRetryDelay = 200 * time.Millisecond

// nodeFlags are the flags every command that talks to the nodes takes.
type nodeFlags struct {
	fs            *flag.FlagSet
	nodes         string
	ttl           time.Duration
	nodeTimeout   time.Duration
	maxTimeout    time.Duration // --max-node-timeout; 0: the library's default
	retryDelay    time.Duration
	recoveryDelay time.Duration
	waitReplicas  int
	withTTL       bool // --ttl is a flag of the command
	logLevel      string
	logFormat     logFormat
	telemetry     observe.Config
	// checkBy, when set, bounds dial's check of the nodes: the end of a
	// command's --wait, which counts from the command's start.
	checkBy time.Time
	started *observe.Telemetry // the exporters dial started
	tls     tlsFlags
	// readOnly: the command changes nothing (inspect, list, check, elect
	// --listen), so that a node that refuses its configuration does not
	// keep it from showing what the other nodes hold (see dial).
	readOnly bool
}

// register adds the node flags to fs. withTTL adds --ttl, and withRetry
// --retry-delay, for the commands that use them.
func (n *nodeFlags) register(fs *flag.FlagSet, withTTL, withRetry bool) {
	n.fs, n.withTTL = fs, withTTL
	n.nodes = defaultNodes
	fs.Var(&onceString{s: &n.nodes}, "nodes",
		"comma-separated node `URLs`, all in one flag: redis://[[user]:password@]host[:port][/db], rediss:// for TLS, unix://; "+
			"$"+envNodes+" when the flag is absent; passwords are never printed")
	n.ttl = defaultTTL
	if withTTL {
		secondsVar(fs, &n.ttl, "ttl", defaultTTL,
			"lock time-to-live, a `duration` (a bare number is seconds), at least "+minTTL.String()+": a holder that vanishes "+
				"blocks others this long, plus its lock-delay if any; with that, at most --recovery-delay")
	}
	unitVar(fs, &n.nodeTimeout, "node-timeout", defaultNodeTimeout,
		"bound on each request to one node, a `duration` with its unit: small against the TTL, "+
			"large enough for a healthy round trip")
	unitVar(fs, &n.maxTimeout, "max-node-timeout", 0,
		"how far the bound on each request rises while replies come late (a busy host, a slow network): "+
			"to twice the longest reply seen lately, a `duration` with its unit; "+
			"0 for a quarter of the TTL, at most 400ms; "+
			"equal to --node-timeout to keep it fixed")
	n.retryDelay = defaultRetryDelay
	if withRetry {
		unitVar(fs, &n.retryDelay, "retry-delay", defaultRetryDelay,
			"longest random pause between attempts to acquire, a `duration` with its unit (200ms); "+
				"pauses start at 10ms and double up to it")
	}
	n.tls.register(fs)
	fs.IntVar(&n.waitReplicas, "wait-replicas", 0,
		"count a node's grant or extension only once this many of its replicas confirmed it (WAIT), "+
			"so that a failover hands the locks over; 0 to not wait")
	fs.StringVar(&n.logLevel, "log-level", "warn",
		"the library's log records on stderr at this level and above: "+strings.Join(observe.LogLevels, ", ")+
			"; warn shows lost locks, failing nodes and releases short of a majority")
	n.logFormat = logText
	fs.Var(&n.logFormat, "log-format", logFormatUsage)
	fs.StringVar(&n.telemetry.Metrics, "metrics", "",
		"export the library's metrics: prometheus (text on --metrics-addr, /metrics), otlp (over HTTP, to "+
			"where the OTEL_EXPORTER_OTLP_* variables say) or none; $REDLOCK_METRICS when absent (not "+
			"$OTEL_METRICS_EXPORTER, which is the wrapped command's); "+
			"a failed export is said on stderr, at most once a minute")
	fs.Var(describedString{&n.telemetry.PrometheusAddr, "$REDLOCK_METRICS_ADDR, else localhost:9464"},
		"metrics-addr", "`host:port` of the Prometheus endpoint of --metrics prometheus; a port in use there "+
			"is an error (exit 78) and nothing runs")
	fs.StringVar(&n.telemetry.Traces, "traces", "",
		"export a span per acquire, extend and release: otlp or none; $REDLOCK_TRACES when absent")
	secondsVar(fs, &n.recoveryDelay, "recovery-delay", defaultRecoveryDelay,
		"how long a node that restarted without its data sits out of every quorum, "+
			"a `duration` (a bare number is seconds); "+
			"must be at least the largest TTL, plus lock-delay, any client of the nodes uses, and the same for all of them")
}

// urls returns the node URLs from --nodes, else REDLOCK_NODES, else the
// default, with the TLS flags' files added to the rediss:// ones (see
// tlsFlags.apply). An empty list, or an empty entry in it, is an error: a
// mistyped variable must not fall back to another node list.
func (n *nodeFlags) urls() ([]string, error) {
	list, from := n.list()
	if strings.TrimSpace(list) == "" {
		return nil, fmt.Errorf("%w: %s is empty", redlock.ErrInvalidOptions, from)
	}
	var urls []string
	for i, u := range strings.Split(list, ",") {
		u = strings.TrimSpace(u)
		if u == "" {
			return nil, fmt.Errorf("%w: %s: entry %d is empty", redlock.ErrInvalidOptions, from, i+1)
		}
		if !strings.Contains(u, "://") {
			// NewURL says why, never showing a password, even one that
			// holds '/', '?' or '#' where RedactURL cannot find it.
			_, err := goredis.NewURL(u)
			return nil, fmt.Errorf("%s: %w", from, err)
		}
		urls = append(urls, u)
	}
	return n.tls.apply(n.fs, urls)
}

// list returns the node list as given, from --nodes, else REDLOCK_NODES,
// else the default, and the flag or variable it came from.
func (n *nodeFlags) list() (list, from string) {
	list, from = n.nodes, "--nodes"
	if !setFlags(n.fs)["nodes"] {
		if env, ok := os.LookupEnv(envNodes); ok {
			list, from = env, "$"+envNodes
		}
	}
	return list, from
}

// unsetNote says that the node is the default one when neither --nodes
// nor $REDLOCK_NODES gives the nodes, and returns "" otherwise: for the
// messages about a node that fails, so that a forgotten --nodes does not
// look like a node that is down.
func (n *nodeFlags) unsetNote() string {
	if _, ok := os.LookupEnv(envNodes); ok || setFlags(n.fs)["nodes"] {
		return ""
	}
	return fmt.Sprintf("%s is the default node: neither --nodes nor $%s is set", strings.TrimPrefix(defaultNodes, "redis://"), envNodes)
}

// options returns the client options the flags describe.
func (n *nodeFlags) options() *redlock.Options {
	return &redlock.Options{
		// redlock run stops its command a margin before the deadline itself
		// (stopMargin), and reports a loss only when the lock is gone.
		LossMargin:     -1,
		TTL:            n.clientTTL(),
		NodeTimeout:    n.nodeTimeout,
		MaxNodeTimeout: n.maxTimeout,
		Retry:          redlock.ExponentialJitter(min(retryFloor, n.retryDelay), n.retryDelay),
		RecoveryDelay:  n.recoveryDelay,
		WaitReplicas:   n.waitReplicas,
	}
}

// dial checks the flags, starts the exporters they ask for and connects
// to the nodes. On failure it returns why, sorted for the exit code. Close
// the client with close.
// checkContext returns ctx, bounded by checkBy when set, but no sooner
// than minCheck from now: nodes that do not answer by then are left out of
// the check (see goredis.Dial), and a command whose --wait it spent makes
// one attempt.
func (n *nodeFlags) checkContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if n.checkBy.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, latest(n.checkBy, time.Now().Add(minCheck)))
}

// minCheck is the least time the check of the nodes gets within a --wait.
const minCheck = 100 * time.Millisecond

// latest returns the later of a and b.
func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (n *nodeFlags) dial(ctx context.Context, stderr io.Writer) (*redlock.Client, failure, error) {
	if err := n.check(); err != nil {
		return nil, failInvalid, err
	}
	urls, err := n.urls()
	if err != nil {
		return nil, failConfig, n.refused(err)
	}
	opts := n.options()
	logs, asJSON := libraryLog(stderr)
	if opts.Logger, err = observe.NewLogger(logs, n.logLevel, asJSON); err != nil {
		return nil, failInvalid, err
	}
	if asJSON {
		opts.Logger = opts.Logger.With("cmd", n.fs.Name())
	}
	n.telemetry.Errors, n.telemetry.Prefix = stderr, "redlock "+n.fs.Name()
	if n.started, err = observe.Start(ctx, n.telemetry); err != nil {
		if errors.Is(err, observe.ErrEndpoint) {
			return nil, failConfig, n.refused(err)
		}
		return nil, failInvalid, err
	}
	opts.MeterProvider, opts.TracerProvider = n.started.MeterProvider, n.started.TracerProvider
	checkCtx, cancel := n.checkContext(ctx)
	client, err := goredis.Dial(checkCtx, urls, opts)
	cancel()
	if err != nil && n.readOnly && ctx.Err() == nil {
		client, err = dialRefused(urls, opts, err, stderr, n.fs.Name())
	}
	if err != nil {
		n.started.Shutdown()
	}
	switch {
	case err == nil:
		warnUnreachable(opts.Logger, client, len(urls))
		return client, "", nil
	case errors.Is(err, redlock.ErrInvalidTTL):
		return nil, failInvalid, err
	case ctx.Err() != nil:
		return nil, failInterrupted, err
	}
	return nil, failConfig, n.refused(err)
}

// dialRefused returns, for a command that changes nothing, a client of
// the nodes that Dial refused with refusal because some node refuses its
// configuration (credentials, ACL, a replica...), having said so on stderr:
// that node's requests fail, and the command shows what the other nodes
// hold, as it does with a node down. A list that is wrong in itself (a
// malformed URL, a node given twice) stays refused, and so do nodes that
// refuse too many to leave a majority: no answer could then be complete.
func dialRefused(urls []string, opts *redlock.Options, refusal error, stderr io.Writer, cmd string) (*redlock.Client, error) {
	if !errors.Is(refusal, goredis.ErrInvalidURL) || errors.Is(refusal, redlock.ErrDuplicateNode) {
		return nil, refusal
	}
	if len(urls)-refusingNodes(refusal) < len(urls)/2+1 {
		return nil, refusal
	}
	conns := make([]redlock.Conn, 0, len(urls))
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	for _, u := range urls {
		c, err := goredis.NewURL(u)
		if err != nil {
			closeAll()
			return nil, refusal
		}
		conns = append(conns, c)
	}
	client, err := redlock.New(conns, opts)
	if err != nil {
		closeAll()
		return nil, refusal
	}
	sayf(stderr, slog.LevelWarn, cmd, "%s; showing what every node answers, the refusing ones as errors", errText(refusal))
	return client, nil
}

// refusingNodes returns how many nodes refusal, an error of Dial's node
// check that wraps goredis.ErrInvalidURL, names: its first error of
// several joined holds one per node at fault.
func refusingNodes(refusal error) int {
	for err := refusal; err != nil; err = errors.Unwrap(err) {
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			n := 0
			for _, e := range joined.Unwrap() {
				if errors.Is(e, goredis.ErrInvalidURL) {
					n++
				}
			}
			return n
		}
	}
	return 1
}

// warnUnreachable logs each of the n nodes that client could not reach as
// it dialed: a lock taken without them is one failure nearer to none.
func warnUnreachable(log *slog.Logger, client *redlock.Client, n int) {
	down := client.UnreachableAtDial()
	msg := "redlock: node unreachable; locks are taken on the others while a majority answers"
	if n-len(down) < n/2+1 {
		msg = "redlock: node unreachable; too few nodes answer for a majority: no lock can be taken until more do"
	}
	for _, r := range down {
		log.Warn(msg, slog.String("node", r.Node), slog.String("error", errText(r.Err)),
			slog.Int("reachable", n-len(down)), slog.Int("nodes", n), slog.Int("majority", n/2+1))
	}
}

// close closes client, then exports what the exporters still hold.
func (n *nodeFlags) close(client *redlock.Client) {
	client.Close()
	if n.started != nil {
		n.started.Shutdown()
	}
}

// check returns what is wrong with the flags' values, if anything.
func (n *nodeFlags) check() error {
	switch {
	case n.withTTL && n.ttl < minTTL:
		return fmt.Errorf("--ttl %s is below the %s minimum: a lock must outlive the round trips of the "+
			"commands that extend and release it", n.ttl, minTTL)
	case n.nodeTimeout <= 0:
		return errors.New("--node-timeout must be positive")
	case n.nodeTimeout < minNodeTimeout:
		return fmt.Errorf("--node-timeout %s is below the %s minimum: no node answers in time", n.nodeTimeout, minNodeTimeout)
	case n.maxTimeout != 0 && n.maxTimeout < n.nodeTimeout:
		return fmt.Errorf("--max-node-timeout %s is below --node-timeout %s", n.maxTimeout, n.nodeTimeout)
	case n.retryDelay < retryFloor:
		return fmt.Errorf("--retry-delay %s is below %s: a waiter would ask every node again without a pause", n.retryDelay, retryFloor)
	case n.ttlApplies() && 2*n.nodeTimeout > n.ttl:
		return fmt.Errorf("--node-timeout %s is not small against --ttl %s%s: a node that answers that late leaves "+
			"a lock less than half its validity; keep it a small fraction of the TTL (the default is %s)",
			n.nodeTimeout, n.ttl, n.defaultNote("ttl"), defaultNodeTimeout)
	case n.recoveryDelay <= 0:
		return errors.New("--recovery-delay must be positive")
	case n.waitReplicas < 0:
		return errors.New("--wait-replicas must not be negative")
	case n.ttlApplies() && n.ttl > n.recoveryDelay:
		return fmt.Errorf("--ttl %s%s is above --recovery-delay %s: a node that restarted "+
			"without its data could vote again while such a lock is still valid; %s; or raise "+
			"--recovery-delay to at least %s on every client of these nodes together "+
			"(Options.RecoveryDelay in programs)", n.ttl, n.defaultNote("ttl"), n.recoveryDelay, n.longWork(), n.ttl)
	}
	return nil
}

// defaultNote returns " (the default)" when flag was not given, for a
// message that names its value.
func (n *nodeFlags) defaultNote(flag string) string {
	if setFlags(n.fs)[flag] {
		return ""
	}
	return " (the default)"
}

// ttlApplies reports whether --ttl is the TTL of the locks the command
// takes or extends: it is a flag of the command, and for extend, given
// (without it, extend keeps the TTL the token was acquired with); elect
// --listen takes no lock.
func (n *nodeFlags) ttlApplies() bool {
	listen := n.fs.Lookup("listen")
	return n.withTTL && (n.fs.Name() != "extend" || setFlags(n.fs)["ttl"]) && (listen == nil || listen.Value.String() != "true")
}

// clientTTL returns the client's TTL (Options.TTL): --ttl where it
// applies, else at most --recovery-delay, which the client requires of it,
// so that a command that takes no lock of its own (release, inspect, an
// extend that keeps the token's TTL) works with any --recovery-delay.
func (n *nodeFlags) clientTTL() time.Duration {
	if n.ttlApplies() {
		return n.ttl
	}
	return min(n.ttl, n.recoveryDelay)
}

// longWork says how the command holds a lock for longer than
// --recovery-delay without a TTL above it: by renewing one within it.
func (n *nodeFlags) longWork() string {
	switch n.fs.Name() {
	case "acquire":
		return "for work longer than --recovery-delay, use 'redlock run', which renews the lock as long as its " +
			"command runs, or 'redlock extend' the lock again before each --ttl passes"
	case "extend":
		return "to hold the lock for longer, extend it again before each --ttl passes, " +
			"or hold it with 'redlock run', which renews it as long as its command runs"
	case "run":
		return "'redlock run' renews the lock as long as its command runs, so a --ttl within " +
			"--recovery-delay holds it however long the command takes"
	case "elect":
		return fmt.Sprintf("give --ttl %s or less: 'redlock elect' renews the lead as long as its command runs, "+
			"so such a --ttl keeps it however long the command takes", n.recoveryDelay)
	default:
		return "for long work, renew a --ttl within --recovery-delay ('redlock run' does)"
	}
}

// nodeNames returns the names the nodes at urls go by in outcomes and
// errors (their addresses), as the adapter names them; an URL that does
// not parse is named as given, redacted.
func nodeNames(urls []string) []string {
	names := make([]string, len(urls))
	for i, u := range urls {
		c, err := goredis.NewURL(u)
		if err != nil {
			names[i] = goredis.RedactURL(u)
			continue
		}
		names[i] = c.Name()
		c.Close()
	}
	return names
}
