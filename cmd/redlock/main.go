// Command redlock runs a command while holding a distributed lock over N
// independent Redis masters, and offers scripting verbs, a node audit and a
// demo. Run 'redlock help' for usage.
package main

import (
	"context"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/cmd/redlock/internal/cli"
)

// quiet drops go-redis's own log lines (failed dials to a node that is down,
// one per attempt): redlock reports each node's outcome itself.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func main() {
	redis.SetLogger(quiet{})
	// SIGHUP, SIGINT, SIGQUIT and SIGTERM end waits and the demo cleanly;
	// 'redlock run' also catches them itself, to forward them to the
	// command it runs.
	ctx, stop := cli.SignalContext(context.Background())
	code := cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	cli.Exit(ctx, code)
}
