package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redlock-go/redlock"
)

func initCommand() *command {
	return &command{
		name:     "init",
		synopsis: "[flags]",
		summary:  "mark the nodes of a brand-new deployment ready to vote at once",
		about: `
WARNING: only for a brand-new, empty deployment, or when no lock can be
outstanding (every client stopped for longer than the largest TTL).

A node that lost its data (restarted without persistence, or was replaced)
could grant a lock that the other nodes still hold for someone else. So a
node without its restart marker sits out every quorum for --recovery-delay
(the restart quarantine). On a brand-new deployment no node has a marker yet,
and every acquisition is refused with "recovering" until the delay passes;
'redlock init' writes the marker on every node so that they vote at once.

Marking a node ready that restarted while locks were held defeats the
quarantine and can let two clients hold the same lock. init therefore refuses,
unless --force is given, when a node restarted or failed over since its
marker was written (its Redis process changed: it is not new), or when some
nodes are already ready and others are not; it marks no node then, nor
when a node cannot be reached. It judges only the nodes it is given: give
it the whole node list, as the clients have it. Given only nodes that lost
their data together, it cannot tell them from a new deployment.`,
		exits: []exitDoc{
			{"0", "every node is ready"},
			{code(exitFailure), "refused: a node restarted, or some nodes are ready and others are not (see --force)"},
			docUsage,
			{code(exitUnavailable), "some nodes could not be marked ready"},
			docConfig,
		},
		setup: setupInit,
	}
}

func setupInit(fs *flag.FlagSet) runner {
	var nodes nodeFlags
	nodes.register(fs, false, false)
	force := fs.Bool("force", false, "mark the nodes ready even when some already are, or restarted: unsafe while locks may be held")
	return func(ctx context.Context, s streams, args []string) int {
		r := report{s: s, cmd: "init"}
		if msg := positional(args); msg != "" {
			return r.usage(msg)
		}
		client, f, err := nodes.dial(ctx, s.stderr)
		if err != nil {
			return r.failedAs(f, err)
		}
		defer nodes.close(client)
		if err := client.MarkReady(ctx, *force); err != nil {
			if errors.Is(err, redlock.ErrNotBrandNew) {
				sayf(s.stderr, slog.LevelError, "init", "refused: %s; wait for the recovering nodes to sit out "+
					"--recovery-delay, or use --force if no lock can be outstanding", errText(err))
				return exitFailure
			}
			printFailure(s.stderr, "init", err)
			return exitUnavailable
		}
		urls, _ := nodes.urls() // dial checked them
		names := nodeNames(urls)
		fmt.Fprintf(s.stdout, "%s ready: %s\n", plural(len(names), "node"), strings.Join(names, ", "))
		return exitOK
	}
}

// plural returns n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
