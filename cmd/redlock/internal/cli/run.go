package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redlock-go/redlock"
)

// Timing of `redlock run`.
const (
	// stopMarginDivisor and minStopMargin set how long before the lock's
	// validity deadline the command gets SIGTERM when renewal keeps failing:
	// max(TTL/10, 100ms). Renewal extends the lock once a third of the TTL
	// has passed and retries every tenth of the TTL, so stopping a tenth
	// before the deadline gives up only the last retry, and leaves the
	// command a tenth of the TTL to stop before another client can take the
	// lock. The 100 ms floor covers signal delivery and scheduling on a
	// loaded machine, for short TTLs.
	stopMarginDivisor = 10
	minStopMargin     = 100 * time.Millisecond
	// killGraceUsage describes --kill-grace, whose default is the stop
	// margin: SIGKILL then comes at the lock's validity deadline, before
	// anyone else can take it. A longer grace lets the command outlive the
	// lock, unless --lock-delay covers it (see warnKillGrace).
	killGraceUsage = "time between SIGTERM and SIGKILL when the %s is lost: a `duration`, or a bare number of seconds " +
		"(default: until the lock's validity deadline, max(TTL/10, 100ms) after the SIGTERM)"
	// signalSettle is how long a cancelled context waits for the signal that
	// cancelled it to be forwarded, before the command gets SIGTERM for it:
	// a signal reaches redlock's forwarding and the context's handler at the
	// same moment, in no set order, and the command must get it once.
	signalSettle = 50 * time.Millisecond
	// stragglerPoll is how often, after the command exited on a lost lock,
	// redlock checks whether processes of its group are left.
	stragglerPoll = 20 * time.Millisecond
	// renewalPoll is how often redlock looks for a renewal of the lock, to
	// pass its new deadline to the watchdog: a redlock stopped in the
	// instant between a renewal and its next look has the command killed
	// at the deadline before that renewal, early; this bounds the instant.
	renewalPoll = 50 * time.Millisecond
)

// stopMargin returns how long before the validity deadline the command is
// stopped.
func stopMargin(ttl time.Duration) time.Duration {
	return max(ttl/stopMarginDivisor, minStopMargin)
}

// timeFormat renders deadlines: RFC 3339 in UTC with milliseconds, which
// `date -d` parses.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func runCommand() *command {
	return &command{
		name:     "run",
		synopsis: "[flags] KEY [KEY...] -- COMMAND [ARGS...]",
		summary:  "run a command holding the lock KEY, or several (as a reader: --shared; a permit: --limit N)",
		about: `
Acquires the lock KEY on a majority of the nodes, runs COMMAND, renews the lock
while it runs, releases it when it exits, and exits with its exit status.
Every argument before -- is a KEY; without --, the first argument is the one
KEY and the rest is COMMAND.

Readers and writers: with --shared, redlock takes KEY as one of its readers.
Any number of 'run --shared KEY' hold KEY at once, and none while a 'run KEY'
without --shared (a writer) holds it; a writer waits until the readers are
done. Waiting readers and writers are served in the order they came: a
writer that waits keeps the readers that came after it out, and a reader
that waits the writers that came after it, so that neither readers nor
writers coming one after the other starve the other kind. Many readers or
one writer on this table:
  redlock run --shared orders -- ./export-orders.sh   # any number at once
  redlock run orders -- ./migrate-orders.sh           # alone

Several keys: 'run K1 K2 K3 -- COMMAND' holds all the keys together, or
waits: it never holds some while it waits for the others, so that commands
that name overlapping keys in any order cannot deadlock. Each key is a lock
of its own, renewed with the others; the command is stopped when any of
them is lost. With --shared it reads every key; --limit takes one key only.
Keys are taken all at once at each attempt; while it waits, the run keeps
a place in every key's queue, dated when it began, so that runs of
several keys whose sets overlap are served in order, and a writer of
several keys keeps new readers out as a writer of one does. Runs of one
key do not defer to such a place: a stream of them on its keys can delay
it. Lock these three accounts together:
  redlock run acct-17 acct-42 acct-99 -- ./transfer.sh

Semaphores: with --limit N, redlock takes one of N permits of the semaphore
KEY instead, so that at most N commands given the same KEY and N run at
once, across hosts. Permit i is the lock KEY:permit:i, with everything
below: renewal, the stop before its deadline, its own fencing tokens. The
semaphore KEY and the lock KEY are different things: a run without --limit
does not wait for runs with it, nor the other way round. Give every run of
one KEY the same N: runs with different limits admit as many commands as
the largest.

Waiting: with --wait 0 one attempt is made, as flock -n does; otherwise
redlock retries with random pauses until the lock is acquired or --wait
passes, and then exits with the code of the last reason: --conflict-exit-code
when the lock is held by another holder, 69 when too few nodes answer or
vote. flock's spellings work too: -n is --wait 0, -w SECONDS is --wait,
-E CODE is --conflict-exit-code, and they may be written together, as
getopt takes them: -nE0, -w5; --wait and the other durations counted in
seconds (--ttl, --kill-grace, --recovery-delay) take a bare number as
seconds, --wait 1.5 as --wait 1.5s. As with flock -n -E 0, a
--conflict-exit-code of 0 makes a lock held elsewhere a success, and
redlock then says nothing of it on stderr (--verbose does): 'redlock run
-n -E 0 KEY -- COMMAND' in a crontab runs COMMAND where the lock is free
and is silent where another host holds it, also while a longer --wait
waits for that host (other reasons to wait, such as nodes that do not
answer, are said as below).

While it waits it says why on stderr, every few seconds when the
reason changes and every 30s otherwise: who holds the lock (a token, or how
many readers; of several keys, which key), which nodes are recovering or
do not answer.

Losing the lock: the lock is renewed once a third of its TTL has passed. If
renewals keep failing (a majority of nodes is down or unreachable), the
command's whole process group gets SIGTERM max(TTL/10, 100ms) before the
lock's validity deadline, measured by this host's monotonic clock, not when a
server notices; SIGKILL follows --kill-grace later, by default at the
validity deadline, before anyone else can take the lock. A longer
--kill-grace lets a command that is slow to stop outlive the lock, and
overlap the next holder, unless --lock-delay covers the difference (redlock
warns when it does not). redlock then exits with 76. A lock found taken
over gets the same treatment at once. Should redlock itself stop renewing
without dying (stopped by SIGSTOP, hung, its job stopped by Ctrl-Z), a
watchdog process it started kills the command's group at that same SIGKILL
time; should redlock die, at once.

Signals: SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1 and SIGUSR2 sent to redlock
are forwarded to the command's process group; the lock is released once the
command has ended. While waiting for the lock, the first four stop the wait.
Standard input, output and error are the command's; when standard input is
the terminal, the command runs in the terminal's foreground. A SIGINT
(Ctrl-C) that kills the command, or ends a wait, ends redlock by SIGINT
once the lock is released, so that a script running redlock stops too.
Ctrl-Z (SIGTSTP) stops redlock with the command, and continuing redlock
(fg, bg, SIGCONT) continues the command; nothing renews the lock meanwhile.

The command's environment has, for one KEY:
  REDLOCK_KEY       the key held: KEY, or with --limit the permit's, KEY:permit:i
  REDLOCK_TOKEN     the token that holds it (for 'redlock extend' / 'release')
  REDLOCK_FENCE     the fencing token: pass it to the protected resource, which
                    must reject a write with a lower fence than one it has seen
  REDLOCK_PERMIT    with --limit: i, the number of the permit held, 1 to N
  REDLOCK_LIMIT     with --limit: N
for several keys, numbered i = 1, 2, ... in the order the command line
gives them, and no REDLOCK_KEY, REDLOCK_TOKEN nor REDLOCK_FENCE:
  REDLOCK_KEYS      the keys, separated by spaces
  REDLOCK_KEY_i     key i
  REDLOCK_TOKEN_i   the token that holds key i
  REDLOCK_FENCE_i   the fencing token of key i, for the resource key i guards
and in both cases:
  REDLOCK_DEADLINE  validity deadline at the start (of several keys, the
                    earliest), RFC 3339 UTC with milliseconds; renewal moves
                    the real one forward
  REDLOCK_HELD      1
  REDLOCK_SHARED    with --shared: 1
A nested 'redlock run' sets its own values, and drops those of the outer
one that it does not set. Locks are not re-entrant: a nested run of a KEY
the outer one holds waits for the outer one, which waits for it.

Logs: redlock's own messages and the library's log records (--log-level)
go to stderr as lines of text, or with --log-format json as one JSON object
a line; the command's standard error is its own either way. A metrics
endpoint (--metrics prometheus) that cannot listen, its port in use, is an
error (78) and the command does not run.

Examples:
  redlock run --wait 0 backup -- /usr/local/bin/backup.sh
  redlock run -n -E 0 backup -- /usr/local/bin/backup.sh   # exit 0 when it runs elsewhere
  redlock run --ttl 30s --shell report -- 'make report > out.txt'
  # at most 5 workers call this API at once, on whatever hosts they run:
  redlock run --limit 5 partner-api -- ./sync-orders.sh`,
		exits: []exitDoc{
			{"n", "the command's exit status; 128+n when it was killed by signal n"},
			docUsage,
			docUnavailable,
			{code(exitConflict), "not acquired: held by another holder, or readers, or, for --shared, a writer is waiting (--conflict-exit-code)"},
			{code(exitLockLost), "the lock was lost while the command ran; the command was stopped"},
			docTakenOver,
			docConfig,
			{code(exitCannotExecute), "the command could not be started"},
			{code(exitNotFound), "the command was not found"},
			docInterrupted,
		},
		setup: setupRun,
	}
}

type runConfig struct {
	cmd          string // the command's name in its messages: "run" when empty
	nodes        nodeFlags
	lock         lockFlags
	wait         waitFlag
	conflictCode int
	killGrace    time.Duration
	shell        bool
	verbose      bool
	flags        *flag.FlagSet // the flags parsed, to tell a --kill-grace given from its default
	// campaign is the candidate's value of elect, which waits as an
	// election's candidate (redlock.Election.Campaign); "" for run.
	campaign string
	// lead is the election's NAME of an elect given no COMMAND, whose
	// command is then this executable's hold verb (holdCommand): its
	// messages speak of the lead, not of a command the user did not give
	// nor of its process group; "" otherwise.
	lead string
}

func setupRun(fs *flag.FlagSet) runner {
	c := &runConfig{wait: waitForever}
	c.nodes.register(fs, true, true)
	c.lock.registerLimit(fs, "hold one of `N` permits of the semaphore KEY instead of the lock KEY, "+
		"so that at most N commands run at once, from 1 to "+strconv.Itoa(redlock.MaxLimit)+"; one KEY only")
	c.lock.registerShared(fs, sharedUsage+"; with several keys, every one is taken shared")
	c.lock.registerOwner(fs)
	c.lock.registerLockDelay(fs)
	registerWait(fs, &c.wait)
	fs.IntVar(&c.conflictCode, "conflict-exit-code", exitConflict, "exit status when the lock is held by another holder after --wait; "+
		"0 makes that a success, which says nothing on stderr unless --verbose, as flock -E 0")
	aliasVar(fs, "E", "conflict-exit-code", "", "flock's -E: --conflict-exit-code `CODE`")
	secondsVar(fs, &c.killGrace, "kill-grace", 0, fmt.Sprintf(killGraceUsage, "lock"))
	c.flags = fs
	fs.BoolVar(&c.shell, "shell", false, "run the command with /bin/sh -c, its words joined by spaces")
	fs.BoolVar(&c.verbose, "verbose", false, "report acquisition, renewals, forwarded signals and the release on stderr")
	return c.run
}

// name returns the command's name, as its messages give it.
func (c *runConfig) name() string {
	if c.cmd == "" {
		return "run"
	}
	return c.cmd
}

// logf prints a progress line on stderr when --verbose is on.
func (c *runConfig) logf(s streams, format string, args ...any) {
	if c.verbose {
		sayf(s.stderr, slog.LevelInfo, c.name(), format, args...)
	}
}

func (c *runConfig) run(ctx context.Context, s streams, args []string) int {
	keys, argv, code := c.parseArgs(s.stderr, args)
	if code != exitOK {
		return code
	}
	if code := c.checkFlags(s.stderr, len(keys)); code != exitOK {
		return code
	}
	c.warnIfNested(s.stderr, keys)
	return c.runHolding(ctx, s, keys, argv)
}

// runHolding takes the lock of keys, or waits for it, then runs argv under
// it, as run does once its arguments are checked.
func (c *runConfig) runHolding(ctx context.Context, s streams, keys, argv []string) int {
	// Catch signals from the start: one arriving while waiting ends the wait.
	sigs, stopSignals := notifySignals()
	defer stopSignals()
	// A message to a stderr whose reader left (2>&1 | head, a logger that
	// exited) fails with EPIPE rather than end redlock by SIGPIPE, which
	// would leave the lock held for its TTL and have the watchdog kill the
	// command: only a lost lock or a signal stops it. The command gets
	// SIGPIPE's default, as a handler does not outlive exec.
	defer catchSIGPIPE()()

	start := time.Now()
	if c.wait >= 0 {
		c.nodes.checkBy = start.Add(time.Duration(c.wait))
	}
	client, f, err := c.nodes.dial(ctx, s.stderr)
	if err != nil {
		return report{s: s, cmd: c.name()}.failedAs(f, err)
	}
	defer c.nodes.close(client)

	held, code := c.acquire(ctx, s, client, keys, sigs, start)
	if held == nil {
		return code // not acquired: exitOK too when --conflict-exit-code is 0
	}
	name := heldName(keys, held) // `lock "KEY"` (a permit's key for a permit), or `locks "K1", "K2"`
	c.logAcquired(s, keys, held)

	jobs := watchJobs() // from the start: a Ctrl-Z may come at once
	defer jobs.end()
	ch, err := startChild(argv, c.environment(keys, held), s)
	if err != nil {
		sayf(s.stderr, slog.LevelError, c.name(), "%v", err)
		c.release(s, held, name)
		return startErrorCode(err)
	}
	ch.watch(s, c.name(), c.killAt(held.Until()))
	jobs.ch = ch
	lost := c.supervise(ctx, s, held, name, ch, sigs, jobs)
	ch.endWatch()
	ch.restoreTerminal()
	status := ch.status()
	if lost == nil {
		if err := held.Err(); errors.Is(err, redlock.ErrLockLost) {
			lost = err // lost in the instant the command exited
		}
	}
	c.release(s, held, name)
	commandEnded(ctx, ch)
	if lost != nil {
		ending.Store(endByStatus) // the loss says more than an interruption
		if c.lead == "" {
			sayf(s.stderr, slog.LevelError, c.name(), "the command exited with status %d after the lock was lost", status)
		}
		if errors.Is(lost, redlock.ErrTakenOver) {
			return exitTakenOver
		}
		return exitLockLost
	}
	return status
}

// checkFlags checks the values of the flags that the node flags do not
// cover, for a run of keys keys, and returns exitUsage after saying what
// is wrong, else exitOK.
func (c *runConfig) checkFlags(stderr io.Writer, keys int) int {
	if msg := c.lock.conflict(keys); msg != "" {
		return usageError(stderr, c.name(), msg)
	}
	if msg := c.lock.delayConflict(&c.nodes); msg != "" {
		return usageError(stderr, c.name(), msg)
	}
	switch {
	case c.conflictCode < 0 || c.conflictCode > 255:
		return usageError(stderr, c.name(), "--conflict-exit-code must be in 0..255")
	case c.killGrace < 0:
		return usageError(stderr, c.name(), "--kill-grace must not be negative")
	}
	c.warnKillGrace(stderr)
	return exitOK
}

// warnKillGrace sets --kill-grace to its default, the stop margin, when it
// was not given, and otherwise warns when it lets the command outlive the
// lock: SIGKILL would come after the lock's validity deadline plus its
// lock-delay, when the next holder may start.
func (c *runConfig) warnKillGrace(stderr io.Writer) {
	margin := stopMargin(c.nodes.ttl)
	given := false
	c.flags.Visit(func(f *flag.Flag) { given = given || f.Name == "kill-grace" })
	switch {
	case !given:
		c.killGrace = margin
	case c.killGrace > margin+c.lock.delay:
		sayf(stderr, slog.LevelWarn, c.name(), "--kill-grace %s is longer than the %s between the SIGTERM of a lost lock and "+
			"its validity deadline plus --lock-delay (%s): a command still running then overlaps the next holder; "+
			"give --lock-delay %s or more to keep it out", c.killGrace, margin, c.lock.delay, c.killGrace-margin)
	}
}

// logAcquired reports, with --verbose, each lock that held holds.
func (c *runConfig) logAcquired(s streams, keys []string, held holding) {
	how := ""
	if c.lock.shared {
		how = " shared"
	}
	for _, lock := range locksOf(keys, held) {
		c.logf(s, "acquired %q%s: token %s, fence %d, valid until %s",
			lock.Key(), how, lock.Token(), lock.Fence(), formatTime(lock.Until()))
	}
}

// missingCommand says that no command follows keys, and, of one key, that
// it may be the command given without its KEY ("run -- true": the flags
// end at --, and true is taken for the KEY).
func missingCommand(keys []string) string {
	if len(keys) == 1 {
		return fmt.Sprintf("missing COMMAND after KEY %s (if %s is the command, put the KEY before it)", quoteKeys(keys), quoteKeys(keys))
	}
	return "missing COMMAND after the keys and --"
}

// parseArgs splits the keys from the command, and applies --shell: every
// argument before the first -- is a key; without --, the first argument is
// the one key and the rest is the command.
func (c *runConfig) parseArgs(stderr io.Writer, args []string) ([]string, []string, int) {
	if len(args) == 0 {
		return nil, nil, usageError(stderr, c.name(), "missing KEY and COMMAND")
	}
	keys, rest := args[:1], args[1:]
	dashes := slices.Index(args, "--")
	if dashes >= 0 {
		keys, rest = args[:dashes], args[dashes+1:]
	}
	if msg := checkKeys(keys); msg != "" {
		return nil, nil, usageError(stderr, c.name(), msg)
	}
	if dashes < 0 && len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
		return nil, nil, usageError(stderr, c.name(), fmt.Sprintf("flags go before KEY, and the command after --; %q came after KEY", rest[0]))
	}
	if len(rest) == 0 {
		return nil, nil, usageError(stderr, c.name(), missingCommand(keys))
	}
	if c.shell {
		rest = []string{"/bin/sh", "-c", strings.Join(rest, " ")}
	}
	return keys, rest, exitOK
}

// checkKeys returns what is wrong with the keys of a run, or "": none, an
// empty one, a flag among them, or one given twice.
func checkKeys(keys []string) string {
	if len(keys) == 0 {
		return "missing KEY before --"
	}
	for i, key := range keys {
		switch {
		case strings.HasPrefix(key, "-") && key != "-":
			return fmt.Sprintf("flags go before KEY; %q came after", key)
		case key == "":
			return "KEY is empty"
		case slices.Contains(keys[:i], key):
			return fmt.Sprintf("KEY %q is given twice", key)
		}
	}
	return ""
}

// acquire takes the lock, or the locks of several keys together, with
// auto-renewal, waiting as --wait says. A terminating signal ends the
// wait.
func (c *runConfig) acquire(ctx context.Context, s streams, client *redlock.Client, keys []string, sigs <-chan os.Signal, start time.Time) (holding, int) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		held holding
		err  error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		w := waiting{client: client, keys: keys, limit: int(c.lock.limit), shared: c.lock.shared, wait: c.wait,
			stderr: s.stderr, cmd: c.name(), note: c.nodes.unsetNote(), campaign: c.campaign, start: start,
			quietConflict: c.conflictCode == exitOK && !c.verbose,
			opts:          append([]redlock.LockOption{redlock.WithTTL(c.nodes.ttl), redlock.WithAutoRenew()}, c.lock.options()...)}
		r.held, r.err = w.acquire(actx)
		done <- r
	}()
	var interrupted os.Signal
	for {
		select {
		case sig := <-sigs:
			if terminating(sig) && interrupted == nil {
				interrupted = sig
				cancel()
			}
		case r := <-done:
			switch {
			case interrupted != nil:
				if r.held != nil {
					r.held.Release(context.Background())
				}
				sayf(s.stderr, slog.LevelWarn, c.name(), "%v while waiting for %s", interrupted, quoteKeys(keys))
				return nil, exitSignalBase + signalNumber(interrupted)
			case r.err == nil:
				return r.held, exitOK
			case ctx.Err() != nil:
				sayf(s.stderr, slog.LevelWarn, c.name(), "stopped waiting for %s: %v", quoteKeys(keys), context.Cause(ctx))
				return nil, interruptedExit(ctx)
			}
			return nil, c.notAcquired(s, r.err)
		}
	}
}

// notAcquired says on stderr why the lock was not acquired, err, and
// returns the exit code: --conflict-exit-code when another holder has it.
// With --conflict-exit-code 0, which makes a lock held elsewhere a
// success, as with flock -E 0, that conflict is not said, unless
// --verbose: a script that runs its command where it finds the lock free,
// and otherwise leaves it to the holder, writes nothing when it does.
func (c *runConfig) notAcquired(s streams, err error) int {
	f := classify(err)
	if f != failConflict {
		printFailure(s.stderr, c.name(), err)
		return exitFor(f)
	}
	if c.conflictCode != exitOK || c.verbose {
		printFailure(s.stderr, c.name(), err)
	}
	return c.conflictCode
}

// supervise waits for the command to exit while forwarding signals and
// watching what it holds, held, which messages call name. It returns why
// the lock, or a lock of several, was lost while the command ran, or nil.
func (c *runConfig) supervise(ctx context.Context, s streams, held holding, name string, ch *child, sigs <-chan os.Signal,
	jobs *jobControl) (lost error) {
	exited := make(chan error, 1)
	go func() { exited <- ch.cmd.Wait() }()

	sv := &supervision{c: c, s: s, held: held, name: name, ch: ch, margin: stopMargin(c.nodes.ttl)}
	sv.stopAt = held.Until().Add(-sv.margin)
	sv.deadline = time.NewTimer(time.Until(sv.stopAt))
	ch.killAt(sv.killAt(held.Until()))
	defer sv.deadline.Stop()
	sv.logged = held.Until()
	lockDone := held.Done()
	ctxDone := ctx.Done()
	var settle <-chan time.Time
	// Renewals are looked for every renewalPoll: each moves the
	// watchdog's deadline, and --verbose reports it.
	renewalTicks := time.NewTicker(renewalPoll)
	defer renewalTicks.Stop()
	renewals := renewalTicks.C
	watchdogExited := ch.watchdogExited()

	for {
		select {
		case err := <-exited:
			return sv.commandExited(err)
		case sig := <-sigs:
			sv.forward(sig)
		case sig := <-jobs.sigs:
			if jobs.suspends(sig) {
				sv.suspend(jobs)
			}
		case <-jobs.conts:
			sv.continued(jobs)
		case <-ctxDone:
			ctxDone = nil
			settle = time.After(signalSettle)
		case <-settle:
			settle = nil
			sv.terminateOnCancel(ctx)
		case <-lockDone:
			lockDone = nil
			sv.lockLost()
		case <-renewals:
			sv.noteRenewal()
		case <-watchdogExited:
			watchdogExited = nil
			if !sv.watchdogGone { // killedByWatchdog may have seen it
				sv.watchdogGone = true
				sv.watchdogExited()
			}
		case <-sv.deadline.C:
			sv.stopDue()
		case <-sv.kill:
			sv.kill = nil
			sv.killGroup()
		}
	}
}

// supervision is what supervise knows of the command and the lock, or
// the locks, while the command runs.
type supervision struct {
	c    *runConfig
	s    streams
	held holding
	name string // what held holds, for messages (see heldName)
	ch   *child
	// margin is how long before the validity deadline (of several locks,
	// the earliest) the command is stopped; stopAt is when, and deadline
	// fires then.
	margin   time.Duration
	stopAt   time.Time
	deadline *time.Timer
	// kill fires when the command's process group is due SIGKILL; nil
	// until the command is stopped, and once SIGKILL is sent.
	kill       <-chan time.Time
	terminated bool  // the command was sent a terminating signal
	killed     bool  // redlock sent the command's group SIGKILL
	lost       error // why the lock was lost while the command ran, or nil
	// watchdogGone: the end of the watchdog was seen (watchdogExited).
	watchdogGone bool
	// logged is the validity deadline last noted (see noteRenewal).
	logged time.Time
}

// noteRenewal notes a renewal of the lock since the last one noted: the
// validity deadline moved later. The watchdog is told the new deadline,
// and --verbose reports it.
func (sv *supervision) noteRenewal() {
	if until := sv.held.Until(); until.After(sv.logged) {
		sv.logged = until
		sv.ch.killAt(sv.killAt(until))
		sv.c.logf(sv.s, "renewed %s: valid until %s", sv.name, formatTime(until))
	}
}

// killAt returns when redlock would send the command's group SIGKILL,
// were the lock not renewed past until: --kill-grace after the SIGTERM
// due a margin before until.
func (sv *supervision) killAt(until time.Time) time.Time {
	return sv.c.killAt(until)
}

// killAt returns when redlock would send the command's group SIGKILL,
// were the lock not renewed past until (see supervision.killAt).
func (c *runConfig) killAt(until time.Time) time.Time {
	return until.Add(c.killGrace - stopMargin(c.nodes.ttl))
}

// stop records why the lock was lost, and sends the command's process group
// SIGTERM now and SIGKILL after --kill-grace.
func (sv *supervision) stop(reason error) {
	if sv.killedByWatchdog() {
		return
	}
	sv.lost = reason
	if sv.c.lead != "" {
		sv.c.leadLost(sv.s, reason)
	} else {
		sayf(sv.s.stderr, slog.LevelError, sv.c.name(), "%v: stopping the command: SIGTERM to process group %d, SIGKILL in %s",
			reason, sv.ch.pgid, sv.c.killGrace)
	}
	sv.ch.signal(syscall.SIGTERM)
	sv.terminated = true
	sv.kill = time.After(sv.c.killGrace)
}

// killedByWatchdog reports whether the watchdog killed the command's group
// at the deadline redlock last gave it, and then reports the watchdog's
// end (see watchdogExited). A redlock continued past that deadline may see
// its lock lost before the watchdog's end: it says why the command ended,
// and sends it no SIGTERM.
func (sv *supervision) killedByWatchdog() bool {
	w := sv.ch.watchdog
	if sv.watchdogGone || w == nil || time.Now().Before(sv.killAt(sv.logged)) || !w.saidKill() {
		return false
	}
	sv.watchdogGone = true
	sv.watchdogExited()
	return true
}

// leadLost says that the lead of an elect given no COMMAND (see
// runConfig.lead) was lost, and why: the command that held it is
// redlock's own, and ends with it.
func (c *runConfig) leadLost(s streams, reason error) {
	sayf(s.stderr, slog.LevelError, c.name(), "lost the lead of %q: %v", c.lead, reason)
}

// commandExited reports an error other than the command's exit status,
// kills what is left of the command's process group if the lock was lost,
// and returns why the lock was lost, or nil.
func (sv *supervision) commandExited(err error) error {
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		sayf(sv.s.stderr, slog.LevelError, sv.c.name(), "waiting for the command: %v", err)
	}
	if sv.lost == nil && !sv.killed && !sv.watchdogGone && sv.ch.killedBy(syscall.SIGKILL) && sv.ch.watchdog != nil &&
		sv.ch.watchdog.saidKill() {
		// The watchdog's kill, whose end redlock sees apart from the
		// command's: it said so before it killed.
		sv.watchdogGone = true
		sv.watchdogExited()
	}
	if sv.lost != nil {
		sv.c.killStragglers(sv.s, sv.ch, sv.kill)
	}
	return sv.lost
}

// forward passes sig on to the command's process group.
func (sv *supervision) forward(sig os.Signal) {
	sv.c.logf(sv.s, "forwarding %v to process group %d", sig, sv.ch.pgid)
	sv.ch.signal(sig)
	sv.terminated = sv.terminated || terminating(sig)
}

// terminateOnCancel sends the command's process group SIGTERM because ctx
// ended, unless it was already sent a terminating signal.
func (sv *supervision) terminateOnCancel(ctx context.Context) {
	if sv.terminated {
		return
	}
	sv.c.logf(sv.s, "%v: sending SIGTERM to process group %d", context.Cause(ctx), sv.ch.pgid)
	sv.ch.signal(syscall.SIGTERM)
	sv.terminated = true
}

// lockLost stops the command because the lock, or one of several, was
// lost, unless it is already being stopped for that.
func (sv *supervision) lockLost() {
	if sv.lost == nil {
		sv.stop(fmt.Errorf("%s lost: %w", sv.name, sv.held.Err()))
	}
}

// stopDue runs when the stop deadline comes: if the lock was renewed
// meanwhile it moves the deadline, else it stops the command, unless it is
// already being stopped.
func (sv *supervision) stopDue() {
	until := sv.held.Until()
	if next := until.Add(-sv.margin); time.Until(next) > 0 {
		sv.noteRenewal()
		sv.stopAt = next
		sv.deadline.Reset(time.Until(next))
		return
	}
	if sv.lost == nil {
		left := time.Until(until).Round(time.Millisecond)
		if left <= 0 {
			// redlock itself was stopped or starved past the deadline.
			sv.stop(fmt.Errorf("%s could not be renewed: its validity ended at %s, %s ago",
				sv.name, formatTime(until), -left))
			return
		}
		sv.stop(fmt.Errorf("%s could not be renewed: its validity ends at %s, in %s",
			sv.name, formatTime(until), left))
	}
}

// suspend stops redlock's job with the command (see jobControl), and
// continues the command once redlock is continued.
func (sv *supervision) suspend(jobs *jobControl) {
	sv.c.logf(sv.s, "stopping redlock's job with the command (Ctrl-Z)")
	jobs.suspend()
	sv.continued(jobs)
}

// continued runs when redlock was continued (fg, bg, SIGCONT): it stops
// the command if the lock's validity ran out meanwhile, gives the command
// the terminal again if redlock has it (fg after bg), and continues it.
func (sv *supervision) continued(jobs *jobControl) {
	sv.c.logf(sv.s, "continued: continuing process group %d", sv.ch.pgid)
	if !time.Now().Before(sv.stopAt) {
		sv.stopDue()
	}
	jobs.resume()
}

// watchdogExited reports the end of the watchdog while the command runs:
// it killed the command's group at the lock's deadline (redlock was
// stopped past it), or it died, leaving the command unprotected.
func (sv *supervision) watchdogExited() {
	switch {
	case sv.ch.watchdog.didKill() && sv.killed:
		// Both killed the group at the deadline: redlock said so.
		return
	case sv.ch.watchdog.didKill() && sv.terminated:
		// Its kill came first, at the same deadline as redlock's.
		if sv.c.lead == "" {
			sayf(sv.s.stderr, slog.LevelWarn, sv.c.name(), "process group %d was killed at the lock's deadline, "+
				"still running after it was told to stop", sv.ch.pgid)
		}
		return
	case sv.ch.watchdog.didKill() && sv.c.lead != "":
		// As below, for the lead that redlock's own command held.
		sv.lost = fmt.Errorf("%s was not renewed by its deadline: redlock was stopped, or starved, past it", sv.name)
		sv.c.leadLost(sv.s, sv.lost)
		return
	case sv.ch.watchdog.didKill():
		// redlock was stopped, or starved, past the deadline it last gave
		// the watchdog: the command was stopped for the lock, as redlock
		// would have stopped it.
		sv.lost = fmt.Errorf("%s: the watchdog killed process group %d at the deadline redlock last gave it, "+
			"as redlock, stopped or starved, had not renewed the lock by then", sv.name, sv.ch.pgid)
		sayf(sv.s.stderr, slog.LevelError, sv.c.name(), "%v", sv.lost)
		return
	}
	sayf(sv.s.stderr, slog.LevelWarn, sv.c.name(), "the watchdog of process group %d (pid %d) exited: "+
		"should redlock be killed or stopped now, the processes the command started outlive it",
		sv.ch.pgid, sv.ch.watchdog.pid)
}

// killGroup sends SIGKILL to the command's process group; said only of a
// command the user gave, not of the hold of an elect given none.
func (sv *supervision) killGroup() {
	if sv.c.lead == "" {
		sayf(sv.s.stderr, slog.LevelWarn, sv.c.name(), "sending SIGKILL to process group %d", sv.ch.pgid)
	}
	sv.killed = true
	sv.ch.signal(syscall.SIGKILL)
}

// killStragglers gives processes of the command's group that outlived it,
// after the lock was lost, until the kill deadline, then kills them.
func (c *runConfig) killStragglers(s streams, ch *child, kill <-chan time.Time) {
	if kill == nil { // SIGKILL already sent
		return
	}
	poll := time.NewTicker(stragglerPoll)
	defer poll.Stop()
	for ch.groupAlive() {
		select {
		case <-kill:
			sayf(s.stderr, slog.LevelWarn, c.name(), "sending SIGKILL to what is left of process group %d", ch.pgid)
			ch.signal(syscall.SIGKILL)
			return
		case <-poll.C:
		}
	}
}

// lostWhen says when a lock lost was lost: before the command ended, or
// for an elect given no COMMAND, while leading.
func (c *runConfig) lostWhen() string {
	if c.lead != "" {
		return "while leading"
	}
	return "before the command ended"
}

// release releases what the command held, which messages call name, after
// the command ended, and reports a failure.
func (c *runConfig) release(s streams, held holding, name string) {
	err := held.Release(context.Background())
	switch {
	case err == nil:
		c.logf(s, "released %s", name)
	case errors.Is(err, redlock.ErrNotHeld) && c.lock.delay > 0 && (errors.Is(err, redlock.ErrLockLost) || errors.Is(err, redlock.ErrLockExpired)):
		sayf(s.stderr, slog.LevelWarn, c.name(), "%s: lost %s, so not released where lost: the %s "+
			"lock-delay stands where the nodes still keep the key, as after a crash", name, c.lostWhen(), c.lock.delay)
	case errors.Is(err, redlock.ErrNotHeld) && strings.HasPrefix(name, "locks "):
		// Of several keys, the others were released.
		sayf(s.stderr, slog.LevelWarn, c.name(), "%s released, but not every one was still held: %s", name, errText(err))
	case errors.Is(err, redlock.ErrNotHeld) && errors.Is(held.Err(), redlock.ErrTakenOver):
		sayf(s.stderr, slog.LevelWarn, c.name(), "%s had been forced free by an operator (release --force) when released", name)
	case errors.Is(err, redlock.ErrNotHeld):
		// It expired, or another holder took it (a node restarted empty,
		// the key deleted by hand): the release cannot tell which.
		sayf(s.stderr, slog.LevelWarn, c.name(), "%s was no longer held on the nodes when released: "+
			"it had expired, or another holder had taken it", name)
	default:
		printFailure(s.stderr, c.name(), err)
	}
}
