package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
)

// defaultNodes is the node list when neither --nodes nor REDLOCK_NODES is
// given: one Redis on this host's default port.
const defaultNodes = "redis://127.0.0.1:6379"

// envNodes names the environment variable that lists the nodes.
const envNodes = "REDLOCK_NODES"

// The library's defaults (see redlock.Options), which the flags' defaults
// repeat so that the help states them.
const (
	defaultTTL           = 10 * time.Second
	defaultNodeTimeout   = 50 * time.Millisecond
	defaultRecoveryDelay = 30 * time.Second
)

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
	retryDelay    time.Duration
	recoveryDelay time.Duration
	waitReplicas  int
}

// register adds the node flags to fs. withTTL adds --ttl, and withRetry
// --retry-delay, for the commands that use them.
func (n *nodeFlags) register(fs *flag.FlagSet, withTTL, withRetry bool) {
	n.fs = fs
	fs.StringVar(&n.nodes, "nodes", defaultNodes,
		"comma-separated node `URLs`: redis://[[user]:password@]host[:port][/db], rediss:// for TLS, unix://; "+
			"$"+envNodes+" when the flag is absent; passwords are never printed")
	n.ttl = defaultTTL
	if withTTL {
		fs.DurationVar(&n.ttl, "ttl", defaultTTL,
			"lock time-to-live: a holder that vanishes blocks others this long; at most --recovery-delay")
	}
	fs.DurationVar(&n.nodeTimeout, "node-timeout", defaultNodeTimeout,
		"bound on each request to one node: small against the TTL, large enough for a healthy round trip")
	n.retryDelay = defaultRetryDelay
	if withRetry {
		fs.DurationVar(&n.retryDelay, "retry-delay", defaultRetryDelay,
			"longest random pause between attempts to acquire; pauses start at 10ms and double up to it")
	}
	fs.IntVar(&n.waitReplicas, "wait-replicas", 0,
		"count a node's grant or extension only once this many of its replicas confirmed it (WAIT), "+
			"so that a failover hands the locks over; 0 to not wait")
	fs.DurationVar(&n.recoveryDelay, "recovery-delay", defaultRecoveryDelay,
		"how long a node that restarted without its data sits out of every quorum; "+
			"must be at least the largest TTL any client of the nodes uses, and the same for all of them")
}

// urls returns the node URLs from --nodes, else REDLOCK_NODES, else the
// default.
func (n *nodeFlags) urls() []string {
	list := n.nodes
	if !setFlags(n.fs)["nodes"] {
		if env, ok := os.LookupEnv(envNodes); ok && strings.TrimSpace(env) != "" {
			list = env
		}
	}
	var urls []string
	for _, u := range strings.Split(list, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	return urls
}

// options returns the client options the flags describe.
func (n *nodeFlags) options() *redlock.Options {
	return &redlock.Options{
		// redlock run stops its command a margin before the deadline itself
		// (stopMargin), and reports a loss only when the lock is gone.
		LossMargin:    -1,
		TTL:           n.ttl,
		NodeTimeout:   n.nodeTimeout,
		Retry:         redlock.ExponentialJitter(min(retryFloor, n.retryDelay), n.retryDelay),
		RecoveryDelay: n.recoveryDelay,
		WaitReplicas:  n.waitReplicas,
	}
}

// dial connects to the nodes. On failure it prints the reason to stderr and
// returns the exit code.
func (n *nodeFlags) dial(ctx context.Context, stderr io.Writer, cmd string) (*redlock.Client, int) {
	switch {
	case n.ttl <= 0:
		return nil, usageError(stderr, cmd, "--ttl must be positive")
	case n.nodeTimeout <= 0:
		return nil, usageError(stderr, cmd, "--node-timeout must be positive")
	case n.retryDelay < 0:
		return nil, usageError(stderr, cmd, "--retry-delay must not be negative")
	case n.recoveryDelay <= 0:
		return nil, usageError(stderr, cmd, "--recovery-delay must be positive")
	case n.waitReplicas < 0:
		return nil, usageError(stderr, cmd, "--wait-replicas must not be negative")
	case n.ttl > n.recoveryDelay:
		return nil, usageError(stderr, cmd, fmt.Sprintf("--ttl %s is above --recovery-delay %s: a node that restarted "+
			"without its data could vote again while such a lock is still valid; raise --recovery-delay, "+
			"the same on every client of these nodes", n.ttl, n.recoveryDelay))
	}
	client, err := goredis.Dial(ctx, n.urls(), n.options())
	if err != nil {
		switch {
		case errors.Is(err, redlock.ErrInvalidTTL), errors.Is(err, redlock.ErrInvalidOptions):
			return nil, usageError(stderr, cmd, err.Error())
		case ctx.Err() != nil:
			fmt.Fprintf(stderr, "redlock %s: %v\n", cmd, err)
			return nil, exitInterrupted
		}
		fmt.Fprintf(stderr, "redlock %s: %v\n", cmd, err)
		return nil, exitConfig
	}
	return client, exitOK
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

// usageError prints msg with a pointer to the help and returns exitUsage.
func usageError(stderr io.Writer, cmd, msg string) int {
	fmt.Fprintf(stderr, "redlock %s: %s\nRun 'redlock help %s' for usage.\n", cmd, msg, cmd)
	return exitUsage
}

// failure sorts a failed lock operation into the reason scripts act on.
type failure string

const (
	failConflict    failure = "conflict"    // held by another holder
	failLost        failure = "lost"        // this token no longer holds the lock
	failUnavailable failure = "unavailable" // too few nodes answered
	failRecovering  failure = "recovering"  // too few nodes vote yet
	failInterrupted failure = "interrupted" // the wait was cancelled
	failInvalid     failure = "invalid"     // bad input
	failConfig      failure = "config"      // nodes refuse for a reason no retry fixes
)

// classify sorts err, from an acquire, extend or release, into a failure.
func classify(err error) failure {
	var qe *redlock.QuorumError
	switch {
	case errors.Is(err, redlock.ErrInvalidKey), errors.Is(err, redlock.ErrInvalidTTL):
		return failInvalid
	case errors.Is(err, redlock.ErrInvalidOptions):
		return failConfig
	case errors.Is(err, redlock.ErrLockLost), errors.Is(err, redlock.ErrNotHeld):
		return failLost
	case !errors.As(err, &qe):
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return failInterrupted
		}
		return failUnavailable
	}
	held, recovering := 0, 0
	for _, r := range qe.Nodes {
		switch r.Outcome {
		case redlock.OutcomeHeld:
			held++
		case redlock.OutcomeRecovering:
			recovering++
		}
	}
	switch {
	case qe.Op == "acquire" && held > 0:
		return failConflict
	case recovering > 0 && qe.OK+recovering >= qe.Quorum:
		return failRecovering
	case errors.Is(err, context.Canceled):
		return failInterrupted
	}
	return failUnavailable
}

// exitFor returns the exit code for a failure.
func exitFor(f failure) int {
	switch f {
	case failConflict:
		return exitConflict
	case failLost:
		return exitLockLost
	case failInterrupted:
		return exitInterrupted
	case failInvalid:
		return exitUsage
	case failConfig:
		return exitConfig
	default:
		return exitUnavailable
	}
}

// recoveringHint is added to errors where recovering nodes withheld the
// quorum.
const recoveringHint = "nodes that lost their data, or were never used, sit out every quorum for " +
	"--recovery-delay: wait, or on a brand-new deployment run 'redlock init' once"

// printFailure explains a failed lock operation on stderr: a summary line,
// then one line per node.
func printFailure(stderr io.Writer, cmd string, err error) {
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) {
		fmt.Fprintf(stderr, "redlock %s: %v\n", cmd, err)
		return
	}
	fmt.Fprintf(stderr, "redlock %s: %v: %s on %d of %d nodes, %d needed", cmd, qe.Err, verb(qe.Op), qe.OK, len(qe.Nodes), qe.Quorum)
	if qe.OK >= qe.Quorum && qe.Validity <= 0 {
		fmt.Fprintf(stderr, ", but no validity was left (%s)", qe.Validity.Round(time.Microsecond))
	}
	if qe.Cause != nil {
		fmt.Fprintf(stderr, " (%v)", qe.Cause)
	}
	fmt.Fprintln(stderr)
	width := 0
	for _, r := range qe.Nodes {
		width = max(width, len(r.Node))
	}
	for _, r := range qe.Nodes {
		fmt.Fprintf(stderr, "  %-*s  %s\n", width, r.Node, outcomeText(qe, r))
	}
	if classify(err) == failRecovering {
		fmt.Fprintf(stderr, "redlock %s: %s\n", cmd, recoveringHint)
	}
}

// verb names what a node that answered OutcomeOK did in the operation op
// of a QuorumError.
func verb(op string) string {
	switch op {
	case "extend":
		return "extended"
	case "release":
		return "released"
	case "mark ready":
		return "marked ready"
	default:
		return "granted"
	}
}

// outcomeText describes one node's answer.
func outcomeText(qe *redlock.QuorumError, r redlock.NodeResult) string {
	op := qe.Op
	switch r.Outcome {
	case redlock.OutcomeOK:
		return verb(qe.Op)
	case redlock.OutcomeHeld:
		if op == "acquire" {
			return "held by another holder"
		}
		return "does not hold this token"
	case redlock.OutcomeTimeout:
		return "no answer in time"
	case redlock.OutcomeError:
		return "error: " + r.Err.Error()
	case redlock.OutcomeRecovering:
		return fmt.Sprintf("recovering: votes again in %s", r.RecoveringLeft.Round(time.Second))
	default:
		return "not waited for"
	}
}

// nodeJSON is one node's outcome in JSON output.
type nodeJSON struct {
	Node    string `json:"node"`
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
}

// failureJSON is a failed operation in JSON output.
type failureJSON struct {
	Key    string     `json:"key"`
	Error  string     `json:"error"`
	Reason failure    `json:"reason"`
	Nodes  []nodeJSON `json:"nodes,omitempty"`
}

func newFailureJSON(key string, err error) failureJSON {
	out := failureJSON{Key: key, Error: err.Error(), Reason: classify(err)}
	var qe *redlock.QuorumError
	if errors.As(err, &qe) {
		for _, r := range qe.Nodes {
			n := nodeJSON{Node: r.Node, Outcome: r.Outcome.String()}
			if r.Err != nil {
				n.Error = r.Err.Error()
			}
			out.Nodes = append(out.Nodes, n)
		}
	}
	return out
}

// acquireWaiting takes the lock named key as --wait says: one attempt when
// wait is 0; otherwise attempts until the lock is acquired, wait has passed
// (never, when wait is negative) or ctx ends. When the first attempt fails,
// before the wait begins, notice gets its error, so that a waiting user can
// be told why.
func acquireWaiting(ctx context.Context, client *redlock.Client, key string, wait waitFlag, notice func(error),
	opts ...redlock.LockOption) (*redlock.Lock, error) {
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(wait))
		defer cancel()
	}
	lock, err := client.TryAcquire(ctx, key, opts...)
	if err == nil || wait == 0 || !errors.Is(err, redlock.ErrNotAcquired) || ctx.Err() != nil {
		return lock, err
	}
	notice(err)
	return client.Acquire(ctx, key, opts...)
}

// noticeRecovering tells a waiting user that nodes are recovering, which can
// last the recovery delay, and how a brand-new deployment avoids it.
func noticeRecovering(stderr io.Writer, cmd string) func(error) {
	return func(err error) {
		if classify(err) != failRecovering {
			return
		}
		var qe *redlock.QuorumError
		errors.As(err, &qe)
		var left time.Duration
		n := 0
		for _, r := range qe.Nodes {
			if r.Outcome == redlock.OutcomeRecovering {
				n++
				left = max(left, r.RecoveringLeft)
			}
		}
		fmt.Fprintf(stderr, "redlock %s: waiting: %d of %d nodes are recovering, for up to %s more "+
			"(on a brand-new deployment, 'redlock init' ends this at once)\n", cmd, n, len(qe.Nodes), left.Round(time.Second))
	}
}
