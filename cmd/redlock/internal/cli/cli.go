// Package cli implements the redlock command: run a command while holding a
// lock, scripting verbs (acquire, extend, release, inspect), a node audit
// (doctor), init for brand-new nodes, and a demo that needs no setup.
//
// Run is the whole command as a function, called by cmd/redlock with the
// process's arguments and streams, and by the tests directly.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
)

// streams are the standard streams a command reads and writes.
type streams struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// cmdStderr is the standard error of the command 'redlock run' runs
	// when it is not stderr: with --log-format json, stderr turns
	// redlock's messages into records, and the command's output is its
	// own.
	cmdStderr io.Writer
	// interruptCode returns the exit code of a wait that the context of
	// Run interrupted (see interruptedExit); nil means 130.
	interruptCode func() int
}

// commandStderr returns the standard error of the command 'redlock run'
// runs.
func (s streams) commandStderr() io.Writer {
	if s.cmdStderr != nil {
		return s.cmdStderr
	}
	return s.stderr
}

// runner runs a command once its flags are parsed; args are the arguments
// left after the flags.
type runner func(ctx context.Context, s streams, args []string) int

// command is one redlock sub-command.
type command struct {
	name     string
	synopsis string // arguments after the name, for the usage line
	summary  string // one line, for the command list
	about    string // paragraphs of help after the usage line
	exits    []exitDoc
	// jsonReport: with --json, the command prints one JSON object on
	// stdout whatever happens (see report), and its arguments are names,
	// never a command's.
	jsonReport bool
	// setup registers the command's flags on fs and returns its runner.
	setup func(fs *flag.FlagSet) runner
}

// commands lists the sub-commands in the order the help shows them.
func commands() []*command {
	return []*command{runCommand(), electCommand(), acquireCommand(), extendCommand(), releaseCommand(),
		inspectCommand(), listCommand(), checkCommand(), doctorCommand(), initCommand(), demoCommand()}
}

func lookup(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

// Run runs the redlock command with args (without the program name) and
// returns its exit status. ctx ends waits for a lock and the demo; for
// `redlock run` its end stops the running command with SIGTERM, as a SIGTERM
// sent to redlock would. Run blocks until the command is done.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	s := streams{stdin: stdin, stdout: stdout, stderr: stderr, interruptCode: func() int { return interruptedExit(ctx) }}
	if len(args) == 0 {
		writeMainHelp(stderr)
		return exitUsage
	}
	if code, ok := runBuiltin(s, args); ok {
		return code
	}
	c := lookup(args[0])
	if c == nil {
		return unknownCommand(s, args)
	}
	fs := newFlagSet(c.name)
	run := c.setup(fs)
	args = append(args[:1:1], attachedValues(fs, args[1:])...)
	err := fs.Parse(args[1:])
	if errors.Is(err, flag.ErrHelp) {
		writeHelp(stdout, c)
		return exitOK
	}
	asJSON := wantsJSONLog(args[1:])
	if f := fs.Lookup("log-format"); err == nil && f != nil {
		asJSON = f.Value.String() == string(logJSON)
	}
	s, endLog := logTo(s, c.name, asJSON)
	defer endLog()
	if err == nil {
		err = checkFlags(c, fs, args[1:])
	}
	if err != nil {
		return report{s: s, cmd: c.name, json: c.jsonReport && wantsJSON(args[1:])}.usage(err.Error())
	}
	return run(ctx, s, withEndOfFlags(c, fs, args[1:]))
}

// runBuiltin runs the verbs that take no flags of a command: help, version
// and the internal ones. ok is false for any other verb.
func runBuiltin(s streams, args []string) (code int, ok bool) {
	switch args[0] {
	case "help", "-h", "-help", "--help":
		return help(s, args[1:]), true
	case watchdogVerb:
		return watchdog(s.stdin, s.stdout, args[1:]), true
	case holdVerb:
		return hold(s.stdout), true
	case "version", "-version", "--version":
		if len(args) > 1 {
			return usageError(s.stderr, "version", fmt.Sprintf("takes no arguments, got %q", args[1:])), true
		}
		fmt.Fprintf(s.stdout, "redlock %s\n", version())
		return exitOK, true
	}
	return 0, false
}

// checkFlags returns the usage error of flags that parsed but do not go
// together: a flag given under two of its names, one that may be given
// once given again, or, for a command that reports in JSON, a flag after
// its arguments.
func checkFlags(c *command, fs *flag.FlagSet, args []string) error {
	if msg := aliasClash(fs); msg != "" {
		return errors.New(msg)
	}
	if msg := repeatedFlags(fs); msg != "" {
		return errors.New(msg)
	}
	if c.jsonReport {
		if msg := flagAfterArgs(c, fs, args); msg != "" {
			return errors.New(msg)
		}
	}
	return nil
}

// withEndOfFlags returns the arguments the flags of fs left in args, the
// command line after c's name, with the -- that ended the flags put back
// for run and elect: there a -- separates the keys from the command, and
// "run -- echo hi" has no key, rather than the key echo.
func withEndOfFlags(c *command, fs *flag.FlagSet, args []string) []string {
	rest := fs.Args()
	if c.name != "run" && c.name != "elect" {
		return rest
	}
	i := len(args) - len(rest) - 1
	if i < 0 || args[i] != "--" || (i > 0 && takesValue(fs, args[i-1])) {
		return rest
	}
	return append([]string{"--"}, rest...)
}

// takesValue reports whether arg is a flag of fs that takes its value
// from the next argument: not a boolean, and without =value.
func takesValue(fs *flag.FlagSet, arg string) bool {
	if !isFlagOf(fs, arg) || strings.Contains(arg, "=") {
		return false
	}
	f := fs.Lookup(strings.TrimLeft(arg, "-"))
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}

// unknownCommand reports that args[0] names no command, with --json also
// as JSON, and returns exitUsage. A flag given before the command is told
// to go after it.
func unknownCommand(s streams, args []string) int {
	msg, cmd := fmt.Sprintf("unknown command %q", args[0]), ""
	if i := slices.IndexFunc(args, func(a string) bool { return lookup(a) != nil }); i > 0 && strings.HasPrefix(args[0], "-") {
		cmd = args[i]
		msg = fmt.Sprintf("flags go after the command; %q came before %s", args[0], cmd)
	}
	if wantsJSON(args) {
		writeJSON(s.stdout, failureJSON{Error: msg, Reason: failInvalid, ExitCode: exitUsage})
	}
	if cmd != "" {
		return usageError(s.stderr, cmd, msg)
	}
	fmt.Fprintf(s.stderr, "redlock: %s\nRun 'redlock help' for the list of commands.\n", msg)
	return exitUsage
}

// flagAfterArgs says which flag of fs came after the first of c's
// arguments in args, the command line after c's name, which the flag
// package leaves among the arguments; "" when none did, or -- ended the
// flags. A flag there is an error rather than an argument: c's arguments
// are names, and a name such as --json is a flag put in the wrong place.
func flagAfterArgs(c *command, fs *flag.FlagSet, args []string) string {
	rest := fs.Args()
	if len(rest) == 0 || (len(rest) < len(args) && args[len(args)-len(rest)-1] == "--") {
		return ""
	}
	for _, a := range rest {
		if a == "--" {
			return ""
		}
		if isFlagOf(fs, a) {
			if first := firstArg(c); first != "" {
				return fmt.Sprintf("flags go before %s; %q came after", first, a)
			}
			return fmt.Sprintf("takes no arguments, and flags go right after the command; %q came after %q", a, rest[0])
		}
	}
	return ""
}

// isFlagOf reports whether arg is a flag of fs: -name or --name, with or
// without =value.
func isFlagOf(fs *flag.FlagSet, arg string) bool {
	name, ok := strings.CutPrefix(arg, "-")
	name, _, _ = strings.Cut(strings.TrimPrefix(name, "-"), "=")
	return ok && name != "" && fs.Lookup(name) != nil
}

// firstArg names the first argument of c, as its synopsis does: KEY,
// PREFIX; "" when it takes none.
func firstArg(c *command) string {
	words := strings.Fields(c.synopsis)
	if len(words) < 2 || words[0] != "[flags]" {
		return ""
	}
	return strings.Trim(words[1], "[]")
}

// help prints the command list, or the help of the command args names.
func help(s streams, args []string) int {
	if len(args) == 0 {
		writeMainHelp(s.stdout)
		return exitOK
	}
	if about, ok := builtinHelp[args[0]]; ok && len(args) == 1 {
		fmt.Fprint(s.stdout, about)
		return exitOK
	}
	c := lookup(args[0])
	if c == nil || len(args) > 1 {
		fmt.Fprintf(s.stderr, "redlock help: unknown command %q\nRun 'redlock help' for the list of commands.\n", strings.Join(args, " "))
		return exitUsage
	}
	writeHelp(s.stdout, c)
	return exitOK
}

// builtinHelp is the help of the commands that take no flags, help and
// version, which the command list names beside the others.
var builtinHelp = map[string]string{
	"help": `Usage: redlock help [COMMAND]

Prints the list of commands, the node configuration and the exit codes;
with COMMAND, that command's flags, defaults and exit codes. 'redlock
COMMAND --help' does the same.
`,
	"version": `Usage: redlock version

Prints the version this binary was built from, as the Go toolchain recorded
it, and the Go version: the module version, for a binary installed with
'go install github.com/redlock-go/redlock/cmd/redlock@VERSION'; the VCS
revision and commit time (and "modified" for uncommitted changes), for one
built with 'go build' or 'go install' in a git clone. A binary built with
'go run' or -buildvcs=false has neither, and says so. --version does the
same.
`,
}

// version returns the module version or the VCS revision this binary was
// built from, and the Go version.
func version() string {
	info, _ := debug.ReadBuildInfo()
	return versionOf(info)
}

// versionOf formats what info recorded: the main module's version unless
// it is "(devel)", the VCS revision with its commit time and whether the
// tree was modified, and the Go version; info is nil when the binary has no
// build information.
func versionOf(info *debug.BuildInfo) string {
	if info == nil {
		return "unknown version (no build information)"
	}
	var parts []string
	if v := info.Main.Version; v != "" && v != "(devel)" {
		parts = append(parts, v)
	}
	vcs := map[string]string{}
	for _, kv := range info.Settings {
		vcs[kv.Key] = kv.Value
	}
	if rev := vcs["vcs.revision"]; rev != "" {
		part := fmt.Sprintf("revision %.12s", rev)
		if t := vcs["vcs.time"]; t != "" {
			part += " of " + t
		}
		if vcs["vcs.modified"] == "true" {
			part += ", modified"
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		parts = append(parts, "unknown version (no module version or VCS revision recorded: built with go run, with -buildvcs=false, or outside a git clone)")
	}
	return strings.Join(append(parts, info.GoVersion), ", ")
}

// writeMainHelp prints the command list, the node configuration and the
// exit codes.
func writeMainHelp(w io.Writer) {
	fmt.Fprint(w, `redlock: a distributed lock over N independent Redis masters (Redlock).

Usage:
`)
	cmds := commands()
	width := 0
	for _, c := range cmds {
		width = max(width, len(c.name)+1+len(c.synopsis))
	}
	for _, c := range cmds {
		fmt.Fprintf(w, "  redlock %-*s  %s\n", width, c.name+" "+c.synopsis, c.summary)
	}
	fmt.Fprintf(w, "  redlock %-*s  %s\n", width, "help [COMMAND]", "show a command's flags, defaults and exit codes")
	fmt.Fprintf(w, "  redlock %-*s  %s\n", width, "version", "print the version this binary was built from")
	fmt.Fprintf(w, `
Start with 'redlock demo': it needs no Redis and shows the guarantees at work.

Nodes: --nodes URL,URL,... or $%s, comma-separated redis://, rediss://
or unix:// URLs of independent masters; default %s. A URL with
?master_name=NAME names a Sentinel-managed master through its Sentinels
(addr=HOST:PORT for more of them, password= for the master's); one with
?cluster=1 names a Redis Cluster through its seed nodes (addr=HOST:PORT for
more), all of it one node. A lock needs a majority of the nodes. Passwords
are never printed. rediss:// nodes take --tls-ca, --tls-cert and
--tls-key (redis-cli's --cacert, --cert, --key; when absent,
$%s, $%s and $%s): PEM files of the CA
that signs the nodes' certificates, of a client certificate and of its
key, which is never printed.

Exit codes (each command's help lists its own):
  0      success; for run, the command's own exit status
  1      doctor found an unsafe setting; init refused; a demo check failed
  %-5d  bad flags or arguments
  %-5d  too few nodes answered, or nodes are recovering: nothing was decided
  %-5d  the lock is held by another holder (run: see --conflict-exit-code)
  %-5d  the lock was lost, or this token no longer holds it
  %-5d  an operator forced the lock free (release --force): stop using it
  %-5d  bad node list: an invalid URL, a node given twice, credentials refused,
         nodes that refuse locks (ACL, a replica, a key of another type);
         or --metrics-addr cannot listen (a port in use): nothing runs;
         but inspect, list, check and elect --listen, which change
         nothing, warn of a node that refuses them (a wrong password, an
         ACL), show it as an error and exit as the other nodes' answers
         say, as with a node down (an incomplete list: 69), unless the
         refusing nodes leave no majority
  126    run: the command could not be started; 127: it was not found
  128+n  run: the command was killed by signal n; any: interrupted while waiting

With --json, acquire, extend, release, inspect, list, check and doctor
print exactly one JSON object on stdout whatever happens; a failure's is
{"key", "error", "reason", "exit_code", "nodes"} ("keys" too, of several
keys; a usage error, which asks no node, has no "nodes", and "key" or
"keys" only once they were read from the arguments), its reason one of conflict, lost, taken_over, unavailable,
recovering, interrupted, invalid or config. "nodes" is each node's outcome
{"node", "outcome", "error"}; where the node list is refused (78), each
entry of the list, in order: "error", and why, for the entries at fault
(a malformed URL, an empty entry, a node given twice, credentials
refused), "not asked" for the others, as no lock operation was sent. With --log-format json, what a command writes on stderr is JSON
records, one a line: {"time", "level", "msg", "cmd", ...}.
`, envNodes, defaultNodes, envTLSCA, envTLSCert, envTLSKey, exitUsage, exitUnavailable, exitConflict, exitLockLost, exitTakenOver, exitConfig)
}

// writeHelp prints one command's help: usage, description, flags with their
// defaults, exit codes.
func writeHelp(w io.Writer, c *command) {
	fmt.Fprintf(w, "Usage: redlock %s %s\n\n%s\n", c.name, c.synopsis, strings.TrimSpace(c.about))
	fs := newFlagSet(c.name)
	c.setup(fs)
	fmt.Fprintf(w, "\nFlags:\n")
	writeFlags(w, fs)
	fmt.Fprintf(w, "\nExit codes:\n")
	for _, e := range c.exits {
		fmt.Fprintf(w, "  %-5s  %s\n", e.code, e.meaning)
	}
}
