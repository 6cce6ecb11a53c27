//go:build linux

package delayproxy

import (
	"syscall"
	"time"
)

// prSetTimerSlack is prctl's PR_SET_TIMERSLACK; timerSlackNs the slack
// asked for. The kernel lets a sleeping thread wake up to 50 µs late by
// default, to batch wake-ups; a delay of a quarter of a millisecond asks
// for none.
const (
	prSetTimerSlack = 29
	timerSlackNs    = 1
)

// preciseSleep sleeps for d in the kernel (nanosleep) with no timer slack,
// which on this kind of machine wakes some 40 µs after the time asked,
// where the Go runtime's timers wake an idle process about a millisecond
// late. The slack is set on whichever thread runs the goroutine at the
// time; the goroutine keeps its processor while it sleeps, so that the next
// stage of the proxy, woken by it, runs on the same thread without waiting
// for another to wake.
func preciseSleep(d time.Duration) {
	if d <= 0 {
		return
	}
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, timerSlackNs, 0)
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
