package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/redlock-go/redlock"
)

// report is how one run of a verb tells its outcome: a failure as text on
// stderr and, with --json, exactly one JSON object on stdout whatever the
// outcome, so that a script can always parse what it gets.
type report struct {
	s    streams
	cmd  string
	key  string   // "" for commands without a key, or of several
	keys []string // the keys of a command of several, else nil
	json bool
}

// setKeys records the keys the command acts on: key for one, keys for
// several.
func (r *report) setKeys(keys []string) {
	if len(keys) == 1 {
		r.key = keys[0]
		return
	}
	r.keys = keys
}

// usage reports bad flags or arguments and returns exitUsage.
func (r report) usage(msg string) int {
	if r.json {
		writeJSON(r.s.stdout, failureJSON{Key: r.key, Keys: r.keys, Error: msg, Reason: failInvalid, ExitCode: exitUsage})
	}
	return usageError(r.s.stderr, r.cmd, msg)
}

// failed reports a failed operation, sorted by classify, and returns its
// exit code.
func (r report) failed(err error) int {
	return r.failedAs(classify(err), err)
}

// failedAs reports a failed operation whose reason is already known, and
// returns its exit code.
func (r report) failedAs(f failure, err error) int {
	if f == failInvalid {
		return r.usage(errText(err))
	}
	code := exitFor(f)
	if f == failInterrupted && r.s.interruptCode != nil {
		code = r.s.interruptCode()
	}
	if r.json {
		out := newFailureJSON(r.key, err)
		out.Reason, out.ExitCode = f, code
		var qe *redlock.QuorumError
		if out.Keys = r.keys; r.keys != nil && errors.As(err, &qe) {
			out.Key = qe.Key // the key the nodes' outcomes are about
		}
		writeJSON(r.s.stdout, out)
	}
	printFailure(r.s.stderr, r.cmd, err)
	return code
}

// wantsJSON reports whether the command line asks for JSON output, for
// errors found before or while its flags are parsed.
func wantsJSON(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-json", "--json", "-json=true", "--json=true":
			return true
		}
	}
	return false
}

// writeJSON prints v as one line of JSON.
func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// usageError prints msg with a pointer to the help and returns exitUsage;
// a JSON log gets a record with the help command as "usage".
func usageError(stderr io.Writer, cmd, msg string) int {
	if l, ok := stderr.(*jsonLog); ok {
		l.record(slog.LevelError, msg, slog.String("usage", "redlock help "+cmd))
		return exitUsage
	}
	fmt.Fprintf(stderr, "redlock %s: %s\nRun 'redlock help %s' for usage.\n", cmd, msg, cmd)
	return exitUsage
}

// errText is err's message without the library's "redlock: " prefix, which
// the command's own prefix replaces.
func errText(err error) string {
	return unprefixed(err.Error())
}

// unprefixed is msg without the library's "redlock: " prefixes, and with
// the command's words for what the library names by its own API: the
// flag or argument that set it.
func unprefixed(msg string) string {
	return apiWords.Replace(strings.ReplaceAll(msg, "redlock: ", ""))
}

// apiWords replaces the library's names of the values that the command's
// flags and arguments set, as its errors quote them, by those flags and
// arguments.
var apiWords = strings.NewReplacer(`WithOwner "`, `--owner "`, `Options.Owner "`, `--owner "`,
	`ForceRelease by "`, `--by "`, `Campaign's value "`, `VALUE "`)

// failure sorts a failed lock operation into the reason scripts act on.
type failure string

const (
	failConflict    failure = "conflict"    // held by another holder, or a writer waits
	failLost        failure = "lost"        // this token no longer holds the lock
	failTakenOver   failure = "taken_over"  // an operator forced the lock free
	failUnavailable failure = "unavailable" // too few nodes answered
	failRecovering  failure = "recovering"  // too few nodes vote yet
	failInterrupted failure = "interrupted" // the wait was cancelled
	failInvalid     failure = "invalid"     // bad flags, arguments or input
	failConfig      failure = "config"      // nodes refuse for a reason no retry fixes
)

// sentinelFailures sort the errors that say by themselves what failed, in
// order: the first that err matches decides.
var sentinelFailures = []struct {
	err error
	f   failure
}{
	{errOtherData, failConfig},
	{redlock.ErrInvalidKey, failInvalid}, {redlock.ErrInvalidTTL, failInvalid}, {redlock.ErrInvalidOwner, failInvalid}, {redlock.ErrInvalidToken, failInvalid},
	{redlock.ErrInvalidLockDelay, failInvalid},
	{redlock.ErrInvalidOptions, failConfig}, {redlock.ErrDuplicateNode, failConfig},
	{redlock.ErrTakenOver, failTakenOver},
	{redlock.ErrLockLost, failLost}, {redlock.ErrLockExpired, failLost}, {redlock.ErrNotHeld, failLost},
}

// classify sorts err, from an acquire, extend or release, into a failure.
func classify(err error) failure {
	for _, s := range sentinelFailures {
		if errors.Is(err, s.err) {
			return s.f
		}
	}
	var qe *redlock.QuorumError
	switch {
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
	case failTakenOver:
		return exitTakenOver
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
// quorum, and to a failed acquisition that a node refused as recovering.
const recoveringHint = "nodes that restarted, failed over, lost their data or were never used sit out every " +
	"quorum for --recovery-delay: wait; only a brand-new deployment, which never granted a lock, may skip it " +
	"by 'redlock init'"

// printFailure explains a failed lock operation on stderr: what
// failureLines says, with each node's outcome between its summary and its
// hints; a JSON log gets one record, failureText with the nodes'
// outcomes as "nodes".
func printFailure(stderr io.Writer, cmd string, err error) {
	if l, ok := stderr.(*jsonLog); ok {
		var attrs []slog.Attr
		if nodes := newFailureJSON("", err).Nodes; nodes != nil {
			attrs = append(attrs, slog.Any("nodes", nodes))
		}
		l.record(slog.LevelError, failureText(err), attrs...)
		return
	}
	summary, hints := failureLines(err)
	for _, l := range summary {
		fmt.Fprintf(stderr, "redlock %s: %s\n", cmd, l)
	}
	var qe *redlock.QuorumError
	if errors.As(err, &qe) {
		width := 0
		for _, r := range qe.Nodes {
			width = max(width, len(r.Node))
		}
		for _, r := range qe.Nodes {
			fmt.Fprintf(stderr, "  %-*s  %s\n", width, r.Node, outcomeText(qe.Op, r))
		}
	}
	for _, l := range hints {
		fmt.Fprintf(stderr, "redlock %s: %s\n", cmd, l)
	}
}

// failureText is a failed lock operation's message in one line, as
// printFailure words it without the nodes: the "error" of its JSON.
func failureText(err error) string {
	summary, hints := failureLines(err)
	return strings.Join(append(summary, hints...), "; ")
}

// failureLines words a failed lock operation: the summary, a line, or two
// when the quorum error is one of a semaphore's permits or of several
// keys; and the hints that follow the nodes' outcomes.
func failureLines(err error) (summary, hints []string) {
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) {
		return strings.Split(errText(err), "\n"), nil // errors joined, one a line
	}
	line := fmt.Sprintf("%s: %s on %d of %d nodes, %d needed", errText(qe.Err), verb(qe.Op), qe.OK, len(qe.Nodes), qe.Quorum)
	if len(nodesWith(qe, redlock.OutcomeNotAsked)) == len(qe.Nodes) {
		line = errText(qe.Err) + ": no node was asked"
	}
	if qe.OK >= qe.Quorum && qe.Validity <= 0 {
		line += fmt.Sprintf(", but no validity was left (%s)", qe.Validity.Round(time.Microsecond))
	}
	if cause := endedBy(err, qe); cause != nil {
		line += " (" + causeText(cause) + ")"
	}
	if outer := wrapping(err, qe); outer != "" {
		// A semaphore's: all its permits are held, qe is the last one
		// tried. Or several keys': some were refused, qe is one of them.
		which := "the last tried"
		if !strings.HasPrefix(outer, "all ") {
			which = "one of them"
		}
		summary = append(summary, outer)
		line = fmt.Sprintf("%q, %s: %s", qe.Key, which, line)
	}
	summary = append(summary, line)
	if classify(err) == failRecovering || qe.Op == "acquire" && len(nodesWith(qe, redlock.OutcomeRecovering)) > 0 {
		// Also where other nodes failed too: a node recovering is worth
		// the hint on its own (brand-new nodes also answer late at
		// first, as each loads the function library).
		hints = append(hints, recoveringHint)
	}
	for _, why := range []error{errHeldByAnother, errHeldByReaders, errHeldByNobody, errForcedFree} {
		if errors.Is(err, why) {
			hints = append(hints, unprefixed(why.Error()))
		}
	}
	return summary, append(hints, detailTexts(err)...)
}

// detailTexts returns the texts of the details in err's tree, in order.
func detailTexts(err error) []string {
	var texts []string
	if d, ok := err.(*detail); ok {
		texts = append(texts, d.text)
	}
	switch e := err.(type) {
	case interface{ Unwrap() error }:
		texts = append(texts, detailTexts(e.Unwrap())...)
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			texts = append(texts, detailTexts(inner)...)
		}
	}
	return texts
}

// detail is a reason for a failure, in words about the case at hand: its
// text is a hint after the nodes' outcomes, and errors.Is finds its
// sentinel, which sorts the failure.
type detail struct {
	sentinel error
	text     string
}

func (d *detail) Error() string { return d.text }
func (d *detail) Unwrap() error { return d.sentinel }

// causeText words what ended an operation's context: the end of --wait,
// or a signal; Go's own words for them mean nothing to an operator.
func causeText(cause error) string {
	switch {
	case errors.Is(cause, context.DeadlineExceeded):
		return "the wait ran out"
	case errors.Is(cause, context.Canceled):
		return "interrupted"
	}
	return errText(cause)
}

// wrapping returns what err says before the QuorumError qe it wraps, ""
// when it adds nothing before it. It finds where qe's text starts, its
// sentinel and key.
func wrapping(err error, qe *redlock.QuorumError) string {
	if qe.Err == nil {
		return ""
	}
	msg := err.Error()
	i := strings.Index(msg, ": "+qe.Err.Error()+": key ")
	if i <= 0 {
		return ""
	}
	return unprefixed(msg[:i])
}

// verb names what a node that answered OutcomeOK did in the operation op
// of a QuorumError.
func verb(op string) string {
	switch op {
	case "extend":
		return "extended"
	case "release":
		return "released"
	case "force release":
		return "forced free"
	case "mark ready":
		return "marked ready"
	case "check", "leader":
		return "answered"
	default:
		return "granted"
	}
}

// outcomeName is the name of one node's answer in an operation op, the
// same word in JSON and in text: the library's Outcome says "held" both
// for a key another token holds and, in an extension or release, for a
// token that no longer holds the key.
func outcomeName(op string, o redlock.Outcome) string {
	switch o {
	case redlock.OutcomeOK:
		return verb(op)
	case redlock.OutcomeHeld:
		switch op {
		case "acquire":
			return "held by another holder"
		case "force release":
			return "held by nobody"
		}
		return "not held by this token"
	case redlock.OutcomeTimeout:
		return "no answer in time"
	case redlock.OutcomeError:
		return "error"
	case redlock.OutcomeRecovering:
		return "recovering"
	case redlock.OutcomeNotAsked:
		return "not asked"
	default:
		return "not waited for"
	}
}

// writerWaiting is the name of a reader's refusal by a node where a
// writer waits for the key (redlock.NodeResult.WriterWaits).
const writerWaiting = "a writer is waiting"

// nodeOutcome is the name of one node's answer in an operation op, the same
// word in JSON and in text: outcomeName's, or writerWaiting.
func nodeOutcome(op string, r redlock.NodeResult) string {
	if r.Outcome == redlock.OutcomeHeld && r.WriterWaits {
		return writerWaiting
	}
	return outcomeName(op, r.Outcome)
}

// outcomeText describes one node's answer in an operation op.
func outcomeText(op string, r redlock.NodeResult) string {
	name := nodeOutcome(op, r)
	switch r.Outcome {
	case redlock.OutcomeError:
		return name + ": " + errText(r.Err)
	case redlock.OutcomeRecovering:
		return fmt.Sprintf("%s: votes again in %s", name, r.RecoveringLeft.Round(time.Second))
	}
	return name
}

// nodeJSON is one node's outcome in JSON output.
type nodeJSON struct {
	Node             string `json:"node"`
	Outcome          string `json:"outcome"`
	Error            string `json:"error,omitempty"`
	RecoveringLeftMs int64  `json:"recovering_left_ms,omitempty"`
}

// failureJSON is a failed operation in JSON output.
type failureJSON struct {
	Key      string     `json:"key,omitempty"`
	Keys     []string   `json:"keys,omitempty"` // of several
	Error    string     `json:"error"`
	Reason   failure    `json:"reason"`
	ExitCode int        `json:"exit_code"`
	Nodes    []nodeJSON `json:"nodes,omitempty"`
}

// newFailureJSON describes err, the failure of an operation on key.
func newFailureJSON(key string, err error) failureJSON {
	f := classify(err)
	out := failureJSON{Key: key, Error: failureText(err), Reason: f, ExitCode: exitFor(f)}
	var qe *redlock.QuorumError
	if errors.As(err, &qe) {
		for _, r := range qe.Nodes {
			n := nodeJSON{Node: r.Node, Outcome: nodeOutcome(qe.Op, r), RecoveringLeftMs: r.RecoveringLeft.Milliseconds()}
			if r.Err != nil {
				n.Error = errText(r.Err)
			}
			out.Nodes = append(out.Nodes, n)
		}
	}
	var lr *listRefusal
	if out.Nodes == nil && errors.As(err, &lr) {
		out.Nodes = lr.nodes
	}
	return out
}

// nodesWith returns the names of the nodes of qe whose outcome is o.
func nodesWith(qe *redlock.QuorumError, o redlock.Outcome) []string {
	var names []string
	for _, r := range qe.Nodes {
		if r.Outcome == o {
			names = append(names, r.Node)
		}
	}
	return slices.Clip(names)
}
