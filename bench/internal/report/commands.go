package report

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// scriptCommands are the commands that run a script or a function: the
// others a row counts ran inside them, or by themselves.
var scriptCommands = []string{"evalsha", "eval", "fcall", "evalsha_ro", "eval_ro", "fcall_ro"}

// writeCommands writes, for the cases of one goroutine (serial-*) and of a
// crowd on one key (crowd-*), the Redis commands each library's cycle cost
// the servers, from INFO commandstats: what a cycle asks of Redis, beside
// its CPU.
func (r *Report) writeCommands(b *strings.Builder) {
	header := false
	for _, c := range r.Cases {
		if !strings.HasPrefix(c.ID, "serial-") && !strings.HasPrefix(c.ID, "crowd-") {
			continue
		}
		for _, l := range r.Libraries {
			row, ok := r.Row(c.ID, l.Name)
			if !ok || row.CommandsPerCycle == nil {
				continue
			}
			if !header {
				b.WriteString("\n### Redis commands per cycle\n\n" +
					"The commands the servers ran per cycle in the `serial` cases, and per grant in the `crowd` cases, all nodes together, from " +
					"`INFO commandstats` before and after each round: script and function calls (EVALSHA, " +
					"EVAL, FCALL) count once each, and so does every command they run inside. One node's share " +
					"is the count divided by the nodes. Beside the servers' CPU, the time they spent running the " +
					"scripts and functions (their `usec`, which includes the commands they ran), and the other " +
					"commands (inside the scripts, or sent by themselves); the rest of the CPU is reading requests, " +
					"writing replies and the event loop.\n\n" +
					"| case | library | commands/cycle | script or function calls | Redis CPU/cycle | in scripts or functions | in other commands | by command |\n" +
					"|---|---|---:|---:|---:|---:|---:|---|\n")
				header = true
			}
			total, scripts := commandTotals(row.CommandsPerCycle)
			_, inScripts := commandTotals(row.CommandUsPerCycle)
			usTotal, _ := commandTotals(row.CommandUsPerCycle)
			fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s µs | %s µs | %s µs | %s |\n", c.ID, l.Name, Num(total), Num(scripts),
				Num(row.ServerCPUUsPerCycle), Num(inScripts), Num(usTotal-inScripts), commandList(row.CommandsPerCycle))
		}
	}
}

// commandTotals returns the commands per cycle, and the script and
// function calls among them.
func commandTotals(perCycle map[string]float64) (total, scripts float64) {
	// In name order: a sum of floats depends on its order.
	for _, name := range slices.Sorted(maps.Keys(perCycle)) {
		n := perCycle[name]
		total += n
		for _, s := range scriptCommands {
			if name == s {
				scripts += n
			}
		}
	}
	return total, scripts
}

// minListed is the fewest calls per cycle of a command that commandList
// names: fewer are a probe's, or a rare path's.
const minListed = 0.01

// commandList names the commands of one cycle, the most frequent first:
// "2.00 EVALSHA, 1.00 DEL".
func commandList(perCycle map[string]float64) string {
	names := make([]string, 0, len(perCycle))
	for name, n := range perCycle {
		if n >= minListed {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		if perCycle[names[i]] != perCycle[names[j]] {
			return perCycle[names[i]] > perCycle[names[j]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = Num(perCycle[name]) + " " + strings.ToUpper(strings.ReplaceAll(name, "|", " "))
	}
	return strings.Join(parts, ", ")
}
