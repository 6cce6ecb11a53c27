// Package traffic generates the load of a torture run: worker processes that
// take a lock and update a shared register under it, and the register
// service they update.
//
// Each worker is its own OS process, so that the harness can pause it with
// SIGSTOP like a garbage-collection pause or a swapped-out process. The
// harness starts workers by running its own executable again with the
// worker's configuration in the environment (see RunIfWorker and Spawn), so
// a `go run` binary and a test binary can both host workers. A worker loops:
// acquire the lock (one attempt at a time, with a random pause between
// attempts), read the register, think for a random few milliseconds, write
// the value read plus one, release. It reports every operation on its
// standard output as history events (package history), stamped with the
// shared monotonic clock.
//
// The register lives in the harness process and is served over HTTP on
// 127.0.0.1. It records every read and write it serves, in the order it
// serves them, which is what the lost-update checker reads. Unfenced, it
// accepts everything; fenced, it refuses requests whose fencing token is
// older than one it has already seen; write-fenced, it checks writes only
// (see Mode).
package traffic
