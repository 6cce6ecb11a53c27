package nodes

import (
	"context"
	"strconv"
	"strings"
)

// Commands returns how many times the servers have run each command since
// they started, summed over the servers (INFO commandstats: the commands
// that scripts and functions run count too), by lower-case name, less the
// INFO requests this Set sent itself (Commands, Connections); and under
// UsecPrefix followed by the name, the microseconds the servers spent
// running it (a script's or function's own time includes the commands it
// ran). A server that does not answer counts nothing.
func (s *Set) Commands(ctx context.Context) map[string]int64 {
	total := map[string]int64{}
	for _, n := range s.nodes {
		body, err := info(ctx, n.addr, "commandstats")
		if err != nil {
			continue
		}
		for name, calls := range parseCommandStats(body) {
			total[name] += calls
		}
	}
	s.probes.Add(int64(len(s.nodes)))
	total["info"] -= s.infos.Add(int64(len(s.nodes)))
	if total["info"] <= 0 {
		delete(total, "info")
	}
	return total
}

// UsecPrefix starts the names under which Commands counts the
// microseconds spent in each command.
const UsecPrefix = "usec:"

// parseCommandStats reads the calls of each command from the body of INFO
// commandstats, whose lines read
// "cmdstat_get:calls=4,usec=12,usec_per_call=3.00,…".
func parseCommandStats(body string) map[string]int64 {
	calls := map[string]int64{}
	for _, line := range strings.Split(body, "\r\n") {
		rest, ok := strings.CutPrefix(line, "cmdstat_")
		if !ok {
			continue
		}
		name, fields, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		v, rest, _ := strings.Cut(strings.TrimPrefix(fields, "calls="), ",")
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			calls[name] = n
		}
		v, _, _ = strings.Cut(strings.TrimPrefix(rest, "usec="), ",")
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			calls[UsecPrefix+name] = n
		}
	}
	return calls
}
