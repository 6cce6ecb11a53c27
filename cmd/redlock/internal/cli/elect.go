package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/redlock-go/redlock"
)

func electCommand() *command {
	return &command{
		name:     "elect",
		synopsis: "[flags] NAME VALUE [-- COMMAND [ARGS...]]  |  elect --listen [flags] NAME",
		summary:  "run a command while leading the election NAME with VALUE, or print each leader (--listen)",
		about: `
Campaigns in the leader election NAME with VALUE, as etcdctl elect does:
waits until elected, runs COMMAND while leading, and exits with its exit
status. The leader holds the lock NAME, renewed while the command runs,
with VALUE as its owner (VALUE is 1 to 255 bytes of printable ASCII without
spaces, such as host:port); the lead ends when the command exits, which
elects the next candidate at once, not after a TTL. Everything else is as
'redlock run NAME -- COMMAND': --wait, --conflict-exit-code (not elected
within --wait), signals forwarded, and the command stopped before the lead
is lost: if renewals keep failing, its process group gets SIGTERM
max(TTL/10, 100ms) before the lock's validity deadline, and SIGKILL
--kill-grace later: by default at that deadline, before any other
candidate can be elected (a longer --kill-grace needs a --lock-delay as
long as the difference to keep the next leader out; redlock warns
otherwise); redlock then exits with 76.

The command's environment is run's: REDLOCK_KEY (NAME), REDLOCK_TOKEN,
REDLOCK_FENCE (the leader's term: it strictly increases from one leader to
the next, for the resources the leader writes to), REDLOCK_DEADLINE,
REDLOCK_HELD=1.

Without COMMAND it holds the lead until interrupted, as etcdctl elect
does: once elected it prints "leading NAME, term TERM" on stdout; SIGHUP,
SIGQUIT or SIGTERM resign the lead and end it with 0, SIGINT (Ctrl-C) by
SIGINT. Should the lead be lost (renewals keep failing, as above), it says
"lost the lead of NAME" and why on stderr, and exits with 76: it does not
campaign again, so run it under a supervisor that starts it again
(systemd's Restart=, a Kubernetes pod's restartPolicy), or nobody may be
left to lead.

With --listen, it campaigns for nothing: it prints the leader of NAME, then
each change, until interrupted (exit 0; SIGINT, as Ctrl-C, ends it by
SIGINT, so that a shell running it stops too), one line each:
  leader VALUE term TERM since TIME
  vacant
(a leader of another library, whose token names no owner, shows VALUE
"-", TERM 0 and TIME "unknown"), or with --json one object a line: {"name", "vacant", "value", "term",
"since", "token"}, every field on every line: a vacancy has "value",
"since" and "token" "" and "term" 0 ("value" and "since" are "" too for
a leader whose token does not say, one of another library, which the
"token" field then shows). Leaders come in the order of their terms; a vacancy is
printed when the lead ends without a new leader yet. A leader that came
and went between two reads of the nodes (every TTL/20, from 50ms to
500ms, and at each announced release) may go unprinted. While too few
nodes answer to tell who leads, nothing is printed: the last line stands
until they answer again, and the library's records on stderr say which
nodes fail (a WARN "node failing" each, unless --log-level is error or
off); nodes that refuse the listener (a wrong password, an ACL) and
leave no majority end it at once with exit 78. A
listener takes no lock: its --ttl only paces its reads while nobody leads
(a leader's own TTL paces them while it leads), and one longer than
--recovery-delay is taken as --recovery-delay. It waits for nothing and
runs no command: --wait (-w, -n), --conflict-exit-code (-E),
--retry-delay, --lock-delay, --kill-grace, --shell and --verbose go with a
candidate, and are refused with --listen.

Examples:
  redlock elect scheduler "$(hostname):8080" -- ./scheduler
  redlock elect scheduler "$(hostname):8080"     # lead until interrupted
  redlock elect --listen scheduler
  redlock elect --listen --json scheduler | jq .value`,
		exits: []exitDoc{
			{"n", "the command's exit status; 128+n when it was killed by signal n"},
			{"0", "without COMMAND, or with --listen: ended by SIGHUP, SIGQUIT or SIGTERM (a candidate resigns the lead)"},
			docUsage,
			docUnavailable,
			{code(exitConflict), "not elected within --wait (--conflict-exit-code)"},
			{code(exitLockLost), "the lead was lost while the command ran; the command was stopped. Without COMMAND: the lead was lost"},
			docTakenOver,
			docConfig,
			{code(exitCannotExecute), "the command could not be started"},
			{code(exitNotFound), "the command was not found"},
			docInterrupted,
		},
		setup: setupElect,
	}
}

// electConfig is the flags of elect: run's, and --listen, --json.
type electConfig struct {
	runConfig
	listen bool
	json   bool
}

func setupElect(fs *flag.FlagSet) runner {
	c := &electConfig{runConfig: runConfig{cmd: "elect", wait: waitForever}}
	c.nodes.register(fs, true, true)
	c.lock.registerLockDelay(fs)
	registerWait(fs, &c.wait)
	fs.IntVar(&c.conflictCode, "conflict-exit-code", exitConflict, "exit status when not elected within --wait; "+
		"0 makes that a success, which says nothing on stderr unless --verbose, as flock -E 0")
	aliasVar(fs, "E", "conflict-exit-code", "", "flock's -E: --conflict-exit-code `CODE`")
	secondsVar(fs, &c.killGrace, "kill-grace", 0, fmt.Sprintf(killGraceUsage, "lead"))
	c.flags = fs
	fs.BoolVar(&c.shell, "shell", false, "run the command with /bin/sh -c, its words joined by spaces")
	fs.BoolVar(&c.verbose, "verbose", false, "report the election, renewals, forwarded signals and the resignation on stderr")
	fs.BoolVar(&c.listen, "listen", false, "print each leader of NAME as it changes, until interrupted, instead of campaigning")
	fs.BoolVar(&c.json, "json", false, "with --listen: one JSON object a line")
	return c.elect
}

func (c *electConfig) elect(ctx context.Context, s streams, args []string) int {
	if c.listen {
		return c.listenTo(ctx, s, args)
	}
	if c.json {
		return usageError(s.stderr, "elect", "--json goes with --listen")
	}
	name, value, argv, msg := electArgs(args)
	if msg != "" {
		return usageError(s.stderr, "elect", msg)
	}
	if len(argv) == 0 {
		// Hold the lead until interrupted, as etcdctl elect does.
		cmd, err := holdCommand()
		if err != nil {
			sayf(s.stderr, slog.LevelError, "elect", "%v", err)
			return exitCannotExecute
		}
		argv, c.shell, c.lead = cmd, false, name
	}
	if c.shell {
		argv = []string{"/bin/sh", "-c", strings.Join(argv, " ")}
	}
	if code := c.checkFlags(s.stderr, 1); code != exitOK {
		return code
	}
	c.campaign = value
	return c.runHolding(ctx, s, []string{name}, argv)
}

// electArgs splits elect's arguments, NAME VALUE [-- COMMAND [ARGS...]],
// into the election's name, the candidate's value and the command (none
// to hold the lead until interrupted), or says what is wrong with them.
func electArgs(args []string) (name, value string, argv []string, msg string) {
	if len(args) < 2 || args[0] == "--" || args[1] == "--" {
		return "", "", nil, "want NAME VALUE [-- COMMAND [ARGS...]]"
	}
	if dashes := slices.Index(args, "--"); dashes > 2 {
		return "", "", nil, fmt.Sprintf("want NAME VALUE [-- COMMAND [ARGS...]]: %d words before the first --; "+
			"put -- right after VALUE when the command has a -- of its own", dashes)
	}
	name, value, argv = args[0], args[1], args[2:]
	if msg := checkKeys([]string{name}); msg != "" {
		return "", "", nil, strings.Replace(msg, "KEY", "NAME", 1)
	}
	if msg := checkValue(value); msg != "" {
		return "", "", nil, msg
	}
	if len(argv) == 1 && argv[0] == "--" {
		// An empty command, as from a variable that expanded to nothing,
		// is a mistake, not a request to hold the lead without one.
		return "", "", nil, fmt.Sprintf("missing COMMAND after --; to lead without one, end with VALUE %q", value)
	}
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	return name, value, argv, ""
}

// checkValue says what is wrong with an election's VALUE, which is the
// owner of the leader's lock (see redlock.WithOwner); "" when nothing.
func checkValue(v string) string {
	if v == "" || len(v) > redlock.MaxOwnerBytes || strings.IndexFunc(v, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0 {
		return fmt.Sprintf("VALUE %q must be 1 to %d bytes of printable ASCII without spaces: it names the leader",
			v, redlock.MaxOwnerBytes)
	}
	return ""
}

// candidateFlags are the flags of elect that only a candidate has a use
// for: a listener takes no lock, so that it neither waits for one, nor
// retries, nor keeps one from others once lost, and runs no command to
// stop, run with /bin/sh or report on.
var candidateFlags = []string{"wait", "w", "n", "conflict-exit-code", "E", "retry-delay", "lock-delay", "kill-grace",
	"shell", "verbose"}

// candidateFlagGiven says which flag of candidateFlags was given to elect
// --listen, whose flags fs are, which would otherwise be ignored; "" when
// none was.
func candidateFlagGiven(fs *flag.FlagSet) string {
	msg := ""
	fs.Visit(func(f *flag.Flag) {
		if msg == "" && slices.Contains(candidateFlags, f.Name) {
			msg = dashed(f.Name) + " goes with a candidate, not --listen"
		}
	})
	return msg
}

// listenTo prints the leader of the election named in args, then each
// change, until ctx ends.
func (c *electConfig) listenTo(ctx context.Context, s streams, args []string) int {
	if msg := candidateFlagGiven(c.flags); msg != "" {
		return usageError(s.stderr, "elect", msg)
	}
	if msg := positional(args, "NAME"); msg != "" {
		return usageError(s.stderr, "elect", msg)
	}
	c.nodes.readOnly = true
	client, f, err := c.nodes.dial(ctx, s.stderr)
	if err != nil {
		return report{s: s, cmd: "elect"}.failedAs(f, err)
	}
	defer c.nodes.close(client)
	// The TTL paces the reads: a listener takes no lock.
	election, err := client.NewElection(args[0], redlock.WithTTL(c.nodes.clientTTL()))
	if err != nil {
		printFailure(s.stderr, "elect", err)
		return exitFor(classify(err))
	}
	for l := range election.Observe(ctx) {
		if err := c.printLeader(s.stdout, args[0], l); err != nil {
			sayf(s.stderr, slog.LevelError, "elect", "%v", err)
			return exitUnavailable
		}
	}
	return exitOK
}

// leaderJSON is a leader as elect --listen --json prints it: every field
// on every line, a vacancy's with "value", "since" and "token" "" and
// "term" 0, as check and inspect print a holder that is none.
type leaderJSON struct {
	Name   string `json:"name"`
	Vacant bool   `json:"vacant"`
	Value  string `json:"value"`
	Term   uint64 `json:"term"`
	Since  string `json:"since"` // "" too when the leader's token does not say
	Token  string `json:"token"`
}

// printLeader writes one line for l, the leader of the election name.
func (c *electConfig) printLeader(w io.Writer, name string, l redlock.Leader) error {
	if c.json {
		j := leaderJSON{Name: name, Vacant: l.Vacant()}
		if !j.Vacant {
			j.Value, j.Term, j.Token = l.Value, l.Term, l.Token
		}
		if !j.Vacant && !l.Since.IsZero() {
			j.Since = formatTime(l.Since)
		}
		b, err := json.Marshal(j)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	if l.Vacant() {
		_, err := fmt.Fprintln(w, "vacant")
		return err
	}
	since := "unknown"
	if !l.Since.IsZero() {
		since = formatTime(l.Since)
	}
	value := l.Value
	if value == "" { // another library's lock: its token names no owner
		value = "-"
	}
	_, err := fmt.Fprintf(w, "leader %s term %s since %s\n", value, strconv.FormatUint(l.Term, 10), since)
	return err
}
