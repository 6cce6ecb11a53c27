package nodecheck

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/internal/dialreport"
	"github.com/redlock-go/redlock/internal/identity"
	"github.com/redlock-go/redlock/internal/nodes"
	"github.com/redlock-go/redlock/internal/nodeurl"
	"github.com/redlock-go/redlock/internal/wire"
)

// checkTimeout bounds the first PING to each node: long enough for a TLS
// handshake across a region, short enough that a typo fails fast.
const checkTimeout = 3 * time.Second

// Probe looks at a node whose PING got no answer, and returns an error when
// its URL is the cause (a TLS URL toward a plaintext port, say), or nil
// when the node may just be down. It belongs to the adapter: only it knows
// how its client reaches the node.
type Probe func(conn redlock.Conn) error

// verdict is what the check found out about one node.
type verdict struct {
	ids     []string      // what identifies the servers behind the node (see identity.Of)
	refused error         // an answer showing the node refuses its configuration
	listErr error         // what the probe found wrong with the node's URL
	down    error         // why the node could not be reached, when nothing else is wrong
	took    time.Duration // time to the PING's error, for a node down
}

// Check pings every node at once, bounded by ctx and a few seconds, and,
// once a majority answered, by as long again as they took (see checkAll).
// It returns an error naming each problem with the node list when
//
//   - a node answers but refuses its configuration (bad credentials, a
//     database that does not exist, a cluster URL to a server outside
//     cluster mode, anything but PONG, an answer that is no RESP), is a
//     replica or a Sentinel, which cannot hold locks, or refuses the URL's
//     user the release channels (PUBLISH on channel, an ACL without them)
//     or every way to run the scripts (EVALSHA and FCALL), or a command
//     the scripts run (see commandRefusal), or, with runID
//     set (the restart quarantine on), refuses INFO, without which a
//     restart goes unseen: the error wraps
//     nodeurl.ErrInvalidURL, with the node's name and its answer, however
//     few such nodes there are: no retry fixes them;
//   - a node's TLS handshake fails on a certificate (see
//     nodeurl.IsTLSRefusal): the error wraps nodeurl.ErrInvalidURL and
//     nodeurl.ErrTLS;
//   - two entries reach one server under different names (the same
//     run_id): the error wraps redlock.ErrDuplicateNode;
//   - probe found a node's URL wrong.
//
// Nodes that cannot be reached pass, since Redlock works while a majority
// answers: Check returns them, with the error of their PING and, in a list
// of several, the check of duplicates to finish once they answer
// (dialreport.Down.Identify).
func Check(ctx context.Context, conns []redlock.Conn, probe Probe, channel string, runID bool) (dialreport.Report, error) {
	verdicts := checkAll(ctx, conns, probe, channel, runID)
	ids := newRegistry(conns)
	errs := listErrors(ids, verdicts)
	var r dialreport.Report
	for i, v := range verdicts {
		switch {
		case v.refused != nil:
			errs = append(errs, fmt.Errorf("%w: %s: %w", nodeurl.ErrInvalidURL, conns[i].Name(), v.refused))
		case v.down != nil:
			d := dialreport.Down{Node: i, Err: v.down, Latency: v.took}
			if len(conns) > 1 {
				d.Identify = ids.lateCheck(i)
			}
			r.Down = append(r.Down, d)
		case len(v.ids) == 0 && len(conns) > 1:
			r.Unidentified = append(r.Unidentified, i)
		}
	}
	if len(errs) > 0 {
		return dialreport.Report{}, fmt.Errorf("redlock: node check failed: %w", errors.Join(errs...))
	}
	return r, nil
}

// checkAll checks every node at once, and returns each one's verdict.
// Once a majority of the nodes answered their PING, the others get as long
// again, and at least lateGrace: a node that does not answer by then
// (paused, cut off) is down at Dial, as one that answers nothing is, and
// votes once it answers (see dialreport.Down). Until a majority answered,
// each PING waits for checkTimeout.
func checkAll(ctx context.Context, conns []redlock.Conn, probe Probe, channel string, runID bool) []verdict {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	pings, cut := context.WithCancelCause(ctx)
	defer cut(nil)
	verdicts := make([]verdict, len(conns))
	answered := make(chan bool, len(conns))
	start := time.Now()
	for i, conn := range conns {
		go func() {
			verdicts[i] = checkNode(ctx, pings, conn, probe, channel, runID)
			answered <- verdicts[i].down == nil
		}()
	}
	quorum, answers := len(conns)/2+1, 0
	for range conns {
		if !<-answered {
			continue
		}
		if answers++; answers == quorum {
			grace := max(time.Since(start), lateGrace)
			stop := time.AfterFunc(grace, func() { cut(&lateError{grace: grace}) })
			defer stop.Stop()
		}
	}
	return verdicts
}

// lateGrace is the least time the nodes still to answer a PING get once a
// majority answered.
const lateGrace = 250 * time.Millisecond

// lateError is why the check stopped waiting for a node's PING once a
// majority of the nodes answered: a timeout, as it unwraps to
// context.DeadlineExceeded.
type lateError struct{ grace time.Duration }

func (e *lateError) Unwrap() error { return context.DeadlineExceeded }

func (e *lateError) Error() string {
	return fmt.Sprintf("a majority of the nodes answered, and this one not %s later", e.grace.Round(time.Millisecond))
}

// checkNode pings one node until pings ends, and reads the identities of
// a node that answers PONG, then what it may refuse its URL's user, until
// ctx ends; a node that does not answer goes to probe.
func checkNode(ctx, pings context.Context, conn redlock.Conn, probe Probe, channel string, runID bool) verdict {
	start := time.Now()
	r := ping(pings, conn, probe)
	if v, settled := pingVerdict(r); settled {
		return v
	}
	if r.err != nil {
		down := verdict{down: r.err, took: time.Since(start)}
		if probe != nil && !r.probed {
			down.listErr = probe(conn)
		}
		return down
	}
	pingTook := time.Since(start)
	ids, _ := identity.Of(ctx, conn) // the node answered its PING
	if err := roleRefusal(ctx, conn); err != nil {
		return verdict{ids: ids, refused: err}
	}
	if err := writeRefusal(ctx, max(4*pingTook, lateGrace), conn, channel); err != nil {
		return verdict{ids: ids, refused: err}
	}
	if err := infoRefusal(ctx, conn); runID && err != nil {
		return verdict{ids: ids, refused: err}
	}
	return verdict{ids: ids, listErr: shardOfCluster(ctx, conn, ids)}
}

// writeRefusal returns why the node refuses its URL's user the commands
// that a CLIENT PAUSE … WRITE holds back (see channelRefusal,
// scriptRefusal and commandRefusal), asked for at most bound in all: a node refuses such a
// command (NOPERM, an unknown command) before a pause would hold it back,
// so one held past bound refuses nothing, and a node that pauses writes,
// as an old master does during a failover, holds Dial back no longer.
func writeRefusal(ctx context.Context, bound time.Duration, conn redlock.Conn, channel string) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	refusal := func(check func(context.Context) error) error {
		_, err := nodes.Within(ctx, conn, func(ctx context.Context) (any, error) { return nil, check(ctx) })
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if err := refusal(func(ctx context.Context) error { return channelRefusal(ctx, conn, channel) }); err != nil {
		return err
	}
	if err := refusal(func(ctx context.Context) error { return scriptRefusal(ctx, conn) }); err != nil {
		return err
	}
	// Redis 6.2 holds EVAL back too: it runs no script flagged no-writes.
	return refusal(func(ctx context.Context) error { return commandRefusal(ctx, conn) })
}

// pingVerdict returns the verdict that r, a node's first PING, settles by
// itself, and true: a fault in its URL, or an answer that refuses it. It
// returns false for PONG and for an error that says the node is down.
func pingVerdict(r pinged) (v verdict, settled bool) {
	switch {
	case r.listErr != nil:
		return verdict{listErr: r.listErr}, true
	case r.err == nil && r.reply != "PONG":
		return verdict{refused: fmt.Errorf("unexpected PING reply %v", r.reply)}, true
	case r.err == nil:
		return verdict{}, false
	case isCredentialError(r.err):
		return verdict{refused: fmt.Errorf("%w (credentials refused: check the URL's user and password)", r.err)}, true
	case isConfigError(r.err):
		return verdict{refused: withRemedy(r.err)}, true
	case isNotRESP(r.err):
		return verdict{refused: fmt.Errorf("not a Redis server, its answer is no RESP (%w): check the URL's host and port", r.err)}, true
	case nodeurl.IsTLSRefusal(r.err):
		return verdict{refused: fmt.Errorf("%w: %w", nodeurl.ErrTLS, tlsRefusal(r.err))}, true
	}
	return verdict{}, false
}

// withRemedy adds to err, a refusal of the first request to a node (its
// PING, or what a cluster client sends first), what to grant when it
// names the command the user may not run.
func withRemedy(err error) error {
	text := err.Error()
	i := strings.Index(text, "no permissions to run the '")
	if !strings.Contains(text, "NOPERM") || i < 0 {
		return err
	}
	cmd, _, _ := strings.Cut(text[i+len("no permissions to run the '"):], "'")
	return fmt.Errorf("%w (the clients check a node with it: grant it, as in ACL SETUSER <user> +%s)", err, cmd)
}

// roleRefusal returns why the server behind conn cannot hold locks by its
// role: a replica refuses the scripts' writes, and would vote with its
// master's data if it took them; a Sentinel holds no data. It returns nil
// for a master, a Redis Cluster (whose masters its client finds), and a
// server that refuses ROLE.
func roleRefusal(ctx context.Context, conn redlock.Conn) error {
	if c, ok := conn.(interface{ IsCluster() bool }); ok && c.IsCluster() {
		return nil
	}
	v, err := conn.Do(ctx, "ROLE")
	reply, _ := v.([]any)
	if err != nil || len(reply) == 0 {
		return nil
	}
	switch role, _ := reply[0].(string); role {
	case "slave", "replica":
		of := ""
		if len(reply) > 2 {
			of = fmt.Sprintf(" of %v:%v", reply[1], reply[2])
		}
		return fmt.Errorf("a replica%s, which refuses the locks' writes: name masters only", of)
	case "sentinel":
		return errors.New("a Sentinel, which holds no data: name the master it watches through it, with " +
			"?master_name=NAME added to this URL")
	}
	return nil
}

// channelRefusal returns why the node refuses its URL's user the channels
// on which releases are announced, which waiters subscribe to: PUBLISH on
// channel, a channel of theirs that no waiter listens on, is refused with
// NOPERM (an ACL user without &redlock:released:*; Redis 7 gives a new
// user no channel unless acl-pubsub-default says allchannels), or the
// command itself is (a user without +publish), or PUBLISH is renamed away
// on a server of its own (rename-command). It returns nil when PUBLISH is
// allowed, or fails otherwise.
func channelRefusal(ctx context.Context, conn redlock.Conn, channel string) error {
	_, err := conn.Do(ctx, "PUBLISH", channel, "")
	if c, ok := conn.(interface{ IsCluster() bool }); err != nil && strings.Contains(err.Error(), "unknown command") && (!ok || !c.IsCluster()) {
		return fmt.Errorf("%w (PUBLISH, which announces releases to waiters, is renamed away: waiters would wait out "+
			"their retry delays instead of being woken; restore it on the server (rename-command))", err)
	}
	if err == nil || !strings.Contains(err.Error(), "NOPERM") {
		return nil
	}
	if strings.Contains(err.Error(), "command") {
		// "no permissions to run the 'publish' command"
		return fmt.Errorf("%w (the user may not run PUBLISH, which announces releases to waiters: "+
			"grant it, as in ACL SETUSER <user> +publish)", err)
	}
	return fmt.Errorf("%w (the user may not use the channels that announce releases to waiters: "+
		"grant them, as in ACL SETUSER <user> &%s*, or allchannels)", err, wire.ReleaseChannelPrefix)
}

// scriptRefusal returns why the node refuses its URL's user every way of
// running the scripts that take, extend and release locks: EVALSHA (of a
// script no node has, which runs nothing) refused with NOPERM, and FCALL
// (of a function no node has) refused too, or not used, on a Redis
// Cluster. It returns nil when either may run, or the answers say nothing.
func scriptRefusal(ctx context.Context, conn redlock.Conn) error {
	_, err := conn.Do(ctx, "EVALSHA", strings.Repeat("0", 40), "0")
	if err == nil || !strings.Contains(err.Error(), "NOPERM") {
		return nil
	}
	if c, ok := conn.(interface{ IsCluster() bool }); !ok || !c.IsCluster() {
		_, ferr := conn.Do(ctx, "FCALL", "redlock_no_such_function", "0")
		if ferr != nil && strings.Contains(ferr.Error(), "Function not found") {
			return nil // it runs them as functions
		}
	}
	return fmt.Errorf("%w (the user may run none of the scripts that take, extend and release locks: grant it "+
		"+@scripting, or at least +evalsha +eval (and, from Redis 7.0, +fcall +function|load))", err)
}

// infoRefusal returns why the restart quarantine cannot see a restart of
// the server behind conn: its user may not run INFO, by which the scripts
// read the run_id that they compare with the process that wrote the
// node's restart marker. It returns nil for a Redis Cluster, whose INFO
// reaches one node of many: the scripts refuse there as they run.
func infoRefusal(ctx context.Context, conn redlock.Conn) error {
	if c, ok := conn.(interface{ IsCluster() bool }); ok && c.IsCluster() {
		return nil
	}
	if _, err := conn.Do(ctx, "INFO", "server"); err != nil && isConfigError(err) {
		return fmt.Errorf("%w (the restart quarantine reads the run_id of the node's process by INFO server to see "+
			"a restart that reloaded older data: allow the user +info, or give that guarantee up with Options.DisableQuarantine)", err)
	}
	return nil
}

// probeAfter is how long a node's first PING goes unanswered before the
// probe looks at its URL meanwhile: a TLS URL toward a plaintext port never
// gets an answer, and the probe tells so in a round trip, where the PING
// would wait for checkTimeout.
const probeAfter = 500 * time.Millisecond

// pinged is what a node's first PING got, and the probe if it ran.
type pinged struct {
	reply   any
	err     error
	probed  bool  // the probe ran
	listErr error // what the probe found wrong with the node's URL
}

// ping sends conn its first PING, and waits for its answer until ctx
// ends: a client library may keep waiting for a silent node past ctx
// (go-redis, its context timeouts off, for its read timeout), and the
// caller's bound on the check is what counts. When the PING goes
// unanswered for probeAfter, probe (when not nil) looks at the node
// meanwhile, and a fault it finds in the URL ends the wait at once.
func ping(ctx context.Context, conn redlock.Conn, probe Probe) pinged {
	answered := make(chan pinged, 1)
	go func() {
		v, err := conn.Do(ctx, "PING")
		answered <- pinged{reply: v, err: err}
	}()
	var probeAt <-chan time.Time
	if probe != nil {
		timer := time.NewTimer(probeAfter)
		defer timer.Stop()
		probeAt = timer.C
	}
	select {
	case r := <-answered:
		return r
	case <-ctx.Done():
		return pinged{err: unanswered(ctx)}
	case <-probeAt:
	}
	probed := make(chan error, 1)
	go func() { probed <- probe(conn) }()
	select {
	case r := <-answered:
		if r.err == nil {
			// A late answer ends the wait: a healthy TLS node keeps
			// the probe waiting for an alert that never comes.
			return r
		}
		r.probed, r.listErr = true, <-probed
		return r
	case err := <-probed:
		if err != nil {
			return pinged{probed: true, listErr: err}
		}
	case <-ctx.Done():
		return pinged{err: unanswered(ctx), probed: true}
	}
	select {
	case r := <-answered:
		r.probed = true
		return r
	case <-ctx.Done():
		return pinged{err: unanswered(ctx), probed: true}
	}
}

// unanswered is the error of a PING that ctx ended before its answer.
func unanswered(ctx context.Context) error {
	if late := (*lateError)(nil); errors.As(context.Cause(ctx), &late) {
		return fmt.Errorf("no answer to PING within the check: %w", late)
	}
	return fmt.Errorf("no answer to PING within the check: %w", ctx.Err())
}

// shardOfCluster returns an error wrapping nodeurl.ErrInvalidURL when a
// node named as one server (no cluster parameter in its URL) is a master
// of a Redis Cluster that has others: its locks' keys hash to slots that
// other masters serve, and every request for them would fail. ids are
// the node's identities. It returns nil otherwise; a cluster of one
// master serves every key.
func shardOfCluster(ctx context.Context, conn redlock.Conn, ids []string) error {
	if c, ok := conn.(interface{ IsCluster() bool }); ok && c.IsCluster() {
		return nil
	}
	if !slices.ContainsFunc(ids, func(id string) bool { return strings.HasPrefix(id, "cluster node ") }) {
		return nil
	}
	v, err := conn.Do(ctx, "CLUSTER", "NODES")
	nodes, _ := v.(string)
	masters := 0
	for _, line := range strings.Split(strings.TrimPrefix(nodes, "txt:"), "\n") {
		if f := strings.Fields(line); len(f) > 2 && strings.Contains(f[2], "master") {
			masters++
		}
	}
	if err != nil || masters < 2 {
		return nil
	}
	return fmt.Errorf("%w: %s is one master of a Redis Cluster of %d: name the whole cluster as one node (add cluster=1 to its URL), or a server outside a cluster",
		nodeurl.ErrInvalidURL, conn.Name(), masters)
}

// listErrors returns what is wrong with the node list itself, whatever the
// nodes' state: the probes' findings, then the duplicates.
func listErrors(r *registry, verdicts []verdict) []error {
	var errs []error
	for _, v := range verdicts {
		if v.listErr != nil {
			errs = append(errs, v.listErr)
		}
	}
	return append(errs, duplicates(r, verdicts)...)
}

// duplicates returns an error wrapping redlock.ErrDuplicateNode for each
// entry of conns that shares an identity with an earlier one (see
// identity.Of and registry.admit), naming both, after recording every
// entry's identities in r.
func duplicates(r *registry, verdicts []verdict) []error {
	var errs []error
	for i, v := range verdicts {
		if err := r.admit(i, v.ids); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// configErrors are the beginnings of the server errors that retrying will
// not cure, less the "ERR " that rueidis strips: the node refuses the
// credentials, the database or the commands of its URL, is not the
// cluster the URL says, or refuses clients from afar without a password
// (protected mode).
var configErrors = []string{"WRONGPASS", "NOAUTH", "NOPERM", "AUTH ", "Client sent AUTH", "invalid password", "DB index", "invalid DB index",
	"unknown command", "This instance has cluster support disabled", "DENIED"}

// notRESPErrors are what the client libraries say of an answer that is no
// RESP, as from an HTTP server behind the node's address: go-redis, then
// rueidis.
var notRESPErrors = []string{"redis: invalid reply", "redis: can't parse", "received unknown message type",
	"received unexpected number byte", "received unexpected simple string message ending without CRLF"}

// isNotRESP reports an error that says the node answered, but not in the
// Redis protocol: another server listens at its address.
func isNotRESP(err error) bool {
	return slices.ContainsFunc(notRESPErrors, func(s string) bool { return strings.Contains(err.Error(), s) })
}

// credentialErrors begin the server errors that refuse the URL's user or
// password (of configErrors).
var credentialErrors = []string{"WRONGPASS", "NOAUTH", "AUTH ", "Client sent AUTH", "invalid password"}

// isCredentialError reports an error that refuses the URL's user or
// password.
func isCredentialError(err error) bool {
	msg := strings.TrimPrefix(err.Error(), "ERR ")
	return slices.ContainsFunc(credentialErrors, func(prefix string) bool { return strings.HasPrefix(msg, prefix) })
}

// isConfigError reports server errors that retrying will not cure; also a
// Sentinel that knows no master by the URL's master_name, which each
// client library reports in its own words.
func isConfigError(err error) bool {
	if strings.Contains(strings.ToLower(err.Error()), "no such master") {
		return true
	}
	// go-redis puts the Sentinels' last answer after this: a server that
	// is no Sentinel answers SENTINEL with "unknown command".
	msg, _ := strings.CutPrefix(err.Error(), "redis: all sentinels specified in configuration are unreachable: ")
	msg = strings.TrimPrefix(msg, "ERR ")
	for _, prefix := range configErrors {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}
