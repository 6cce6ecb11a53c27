// Command bench measures this module's lock library against the Go lock
// libraries people use today, on redis-server nodes it starts itself, and
// writes a markdown summary, the raw numbers as JSON and a bar chart.
//
// Run it from the bench directory:
//
//	go run . -readme README.md
//
// See README.md for the cases, the metrics and the latest results.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/redlock-go/redlock/bench/internal/delayproxy"
)

func main() {
	delayproxy.RunIfChild()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
