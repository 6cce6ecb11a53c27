package cli

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// holdVerb is the hidden verb of the command that 'elect NAME VALUE' runs
// when given none (holdCommand): it holds the lead until interrupted, as
// etcdctl elect does.
const holdVerb = "_hold"

// holdCommand returns the command that holds a lead until interrupted:
// this executable with holdVerb.
func holdCommand() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return []string{exe, holdVerb}, nil
}

// hold says on stdout that it leads, with the value and the term its
// environment gives (see runEnvironment), then waits for a signal: SIGHUP,
// SIGQUIT or SIGTERM end it with 0, and SIGINT ends it by SIGINT, so that
// redlock, then a shell running it, stop too.
func hold(stdout io.Writer) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTERM)
	fmt.Fprintf(stdout, "leading %s, term %s\n", os.Getenv(envKey), os.Getenv(envFence))
	if sig := <-sigs; sig == syscall.SIGINT {
		signal.Reset(syscall.SIGINT)
		syscall.Kill(os.Getpid(), syscall.SIGINT)
		select {} // until the signal ends the process
	}
	return exitOK
}
