package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
)

// initProbeKey is the lock name init inspects to read each node's restart
// marker; Inspect reads the marker beside any lock key, and changes nothing.
const initProbeKey = "redlock-init"

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
nodes are already ready and others are not.`,
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
		if !*force {
			states, err := client.Inspect(ctx, initProbeKey)
			if err != nil {
				fmt.Fprintf(s.stderr, "redlock init: %s\n", errText(err))
				return exitSoftware
			}
			var ready, waiting, restarted []string
			for _, st := range states {
				switch {
				case st.Err != nil:
				case st.Restarted:
					restarted = append(restarted, st.Node)
				case st.Recovering:
					waiting = append(waiting, st.Node)
				default:
					ready = append(ready, st.Node)
				}
			}
			if len(restarted) > 0 {
				fmt.Fprintf(s.stderr, "redlock init: refused: %s restarted or failed over since it last voted: not a brand-new deployment.\n"+
					"A restarted node must sit out --recovery-delay so that it cannot grant a lock it forgot.\n"+
					"Wait, or use --force if no lock can be outstanding.\n", strings.Join(restarted, ", "))
				return exitFailure
			}
			if len(ready) > 0 && len(waiting) > 0 {
				fmt.Fprintf(s.stderr, "redlock init: refused: %s already ready but %s recovering: not a brand-new deployment.\n"+
					"A node that lost its data must sit out --recovery-delay so that it cannot grant a lock still held elsewhere.\n"+
					"Wait, or use --force if no lock can be outstanding.\n",
					strings.Join(ready, ", "), strings.Join(waiting, ", "))
				return exitFailure
			}
		}
		if err := client.MarkReady(ctx, *force); err != nil {
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
