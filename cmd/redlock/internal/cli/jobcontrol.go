package cli

import (
	"os"
	"os/signal"
	"syscall"
	"unsafe"
)

// jobControl keeps the command and the job that runs redlock stopped and
// running together, as a shell's job control expects of one job: Ctrl-Z
// stops both, fg or bg runs both again.
//
// With the terminal given to the command (see startChild), Ctrl-Z stops the
// command's group alone, and the shell, waiting for redlock, would wait
// forever on a job that runs on: redlock sees the command stop (SIGCHLD),
// takes the terminal back and stops its own process group. Without it,
// Ctrl-Z reaches redlock's group: redlock passes SIGTSTP on to the
// command's group and stops itself. Either way, once continued, redlock
// gives the command the terminal again if redlock has it (fg, not bg),
// and continues the command's group; if the lock's validity ran out while
// they were stopped (nothing renews it then), it stops the command as it
// does for a lock it could not renew, and the watchdog, which is never
// stopped, kills the group at the lock's deadline while it is still
// stopped.
type jobControl struct {
	ch    *child // set once the command started
	sigs  chan os.Signal
	conts chan os.Signal // SIGCONT: redlock was continued
}

// watchJobs starts catching the signals that tell of stops, before the
// command starts. Signals the process ignores stay ignored.
func watchJobs() *jobControl {
	j := &jobControl{sigs: make(chan os.Signal, 4), conts: make(chan os.Signal, 1)}
	sigs := []os.Signal{syscall.SIGCHLD}
	if !signal.Ignored(syscall.SIGTSTP) {
		sigs = append(sigs, syscall.SIGTSTP)
	}
	signal.Notify(j.sigs, sigs...)
	signal.Notify(j.conts, syscall.SIGCONT)
	return j
}

// end stops watching.
func (j *jobControl) end() {
	signal.Stop(j.sigs)
	signal.Stop(j.conts)
}

// suspends reports whether sig, received while the command runs, asks
// redlock's job to stop: a SIGTSTP, passed on to the command, or the
// command, given the terminal, stopped. A command stopped for reading
// from the terminal, or changing it, while redlock has it (fg after bg)
// is given it and continued instead, as a shell gives it to a job in the
// foreground.
func (j *jobControl) suspends(sig os.Signal) bool {
	if sig == syscall.SIGTSTP {
		j.ch.signal(syscall.SIGTSTP)
		return true
	}
	if j.ch.tty < 0 {
		return false
	}
	stopSig, stopped := j.ch.stopSignal()
	if stopped && (stopSig == syscall.SIGTTIN || stopSig == syscall.SIGTTOU) && inForeground() {
		j.resume()
		return false
	}
	return stopped
}

// suspend stops redlock, with its whole process group when the command had
// the terminal (redlock was in its foreground when it started: the group
// is a shell's job), and returns once redlock is continued.
func (j *jobControl) suspend() {
	select {
	case <-j.conts: // an earlier one, which continued nothing
	default:
	}
	if j.ch.tty >= 0 {
		j.ch.restoreTerminal()
		syscall.Kill(0, syscall.SIGSTOP)
	} else {
		syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	}
	// The stop may take effect after the call returned: the SIGCONT that
	// ends it is what says redlock was stopped and runs again.
	<-j.conts
}

// resume gives the command the terminal again if redlock has it, and
// continues the command's group.
func (j *jobControl) resume() {
	if j.ch.tty >= 0 && inForeground() {
		pgrp := int32(j.ch.pgid)
		syscall.Syscall(syscall.SYS_IOCTL, uintptr(j.ch.tty), syscall.TIOCSPGRP, uintptr(unsafe.Pointer(&pgrp)))
	}
	j.ch.signal(syscall.SIGCONT)
}

// inForeground reports whether standard input is a terminal whose
// foreground is redlock's process group.
func inForeground() bool {
	fg, ok := foregroundGroup(0)
	return ok && fg == syscall.Getpgrp()
}
