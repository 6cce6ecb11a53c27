package cli

import "strconv"

// Exit codes. They follow sysexits.h where one fits, so that they stay clear
// of the small codes most commands use for their own failures; `redlock run`
// otherwise exits with the command's own status, which can be any of these.
const (
	exitOK = 0
	// exitFailure: a check failed (doctor found an unsafe setting, a demo
	// guarantee did not hold).
	exitFailure = 1
	// exitUsage (EX_USAGE): bad flags or arguments.
	exitUsage = 64
	// exitUnavailable (EX_UNAVAILABLE): too few nodes answered, or nodes
	// are recovering, so nothing could be decided.
	exitUnavailable = 69
	// exitSoftware (EX_SOFTWARE): an internal error.
	exitSoftware = 70
	// exitIOError (EX_IOERR): what a verb took could not be handed over:
	// the tokens of 'redlock acquire' could not be written to stdout.
	exitIOError = 74
	// exitConflict (EX_TEMPFAIL): the lock is held by another holder; it may
	// be free later. `redlock run --conflict-exit-code` changes it.
	exitConflict = 75
	// exitLockLost: the lock was lost, or is no longer held by this token.
	exitLockLost = 76
	// exitTakenOver: the lock was forced free by an operator ('redlock
	// release --force'), while the command ran or before this token was
	// used: stop using it.
	exitTakenOver = 77
	// exitConfig (EX_CONFIG): the node list is wrong: a bad URL, a node
	// given twice, credentials refused; or the metrics endpoint cannot
	// listen where it is told to.
	exitConfig = 78
	// exitCannotExecute: the command was found but could not be started.
	exitCannotExecute = 126
	// exitNotFound: the command was not found.
	exitNotFound = 127
	// exitSignalBase: a command killed by signal n makes `redlock run` exit
	// with exitSignalBase+n, as shells report it; an interrupted wait for
	// the lock does the same with the signal that interrupted it.
	exitSignalBase = 128
	// exitInterrupted: the wait for the lock was cancelled (SIGINT).
	exitInterrupted = exitSignalBase + 2
)

// exitDoc documents one exit code in a command's help.
type exitDoc struct {
	code    string
	meaning string
}

func code(c int) string { return strconv.Itoa(c) }

// Exit code documentation shared by several commands.
var (
	docUsage       = exitDoc{code(exitUsage), "bad flags or arguments"}
	docUnavailable = exitDoc{code(exitUnavailable), "too few nodes answered, or nodes are recovering: nothing was decided"}
	docConfig      = exitDoc{code(exitConfig), "bad node list: an invalid URL, a node given twice, credentials refused, nodes that refuse locks (ACL, replica, wrong key type); or the metrics endpoint cannot listen (a port in use)"}
	// docConfigShown is docConfig for the commands that change nothing,
	// which show what the other nodes answer past a node that refuses them.
	docConfigShown = exitDoc{code(exitConfig), "bad node list: an invalid URL, a node given twice; or the metrics endpoint cannot " +
		"listen (a port in use). A node that refuses the configuration (credentials, an ACL) is shown as an error, " +
		"as a node down is, and the exit code is that of the other nodes' answers"}
	docInterrupted = exitDoc{"128+n", "interrupted by signal n while waiting (130 for Ctrl-C)"}
	docTakenOver   = exitDoc{code(exitTakenOver), "an operator forced the lock free (release --force): stop using it"}
)
