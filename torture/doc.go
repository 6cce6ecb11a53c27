// Package torture runs the lock under faults and checks what happened, in
// the manner of a Jepsen test, on one machine in a few minutes.
//
// The packages beneath it follow the flow of the data: traffic (worker
// processes and the register they update) → faults (what goes wrong, and
// when) → history (every operation and fault, as JSON lines on one
// monotonic clock) → check (six checkers of safety and one of waiting)
// → report (a terminal table and an HTML report with a timeline per
// scenario). Package scenario holds the table of scenarios with their
// expected verdicts and bounds on waiting, and cluster the
// redis-server nodes with a proxy per worker and node, or, for the
// "rediscluster/" scenarios, one Redis Cluster that is the only lock node,
// reached directly: a cluster client follows the masters' own addresses,
// so its faults hit processes and slots (restarts, resharding, failovers)
// rather than links.
//
// Run runs one scenario. The command cmd/torture runs the table:
//
//	go run ./cmd/torture                      # the full table
//	go run ./cmd/torture -scenario clock-jump # scenarios matching a regexp
//
// Workers are separate processes started from the running executable, so a
// program that calls Run must call traffic.RunIfWorker first thing in main
// (or TestMain). A scenario's duration and its faults begin once every
// worker has made its client: a worker slow to start costs the run none
// of its time.
package torture
