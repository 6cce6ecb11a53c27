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
// the value read plus one, release. A worker with a Limit takes one of that
// many permits of the lock's name instead (a counting semaphore), and
// updates the register of the permit it holds: each permit guards a
// resource of its own, like a slot of a pool. A Shared worker takes the
// name as a reader of a read-write lock, and only reads the register; a
// worker with Names takes the locks of those names together, all or
// nothing, and updates the register of each. It reports every operation on
// its standard output as history events (package history), stamped with
// the shared monotonic clock.
//
// The registers live in the harness process and are served over HTTP on
// 127.0.0.1, one per lock key that workers hold. They record every read
// and write they serve, in the order they serve them, which is what the
// lost-update checker reads. Unfenced, a register accepts everything;
// fenced, it refuses requests whose fencing token is older than one it has
// already seen; write-fenced, it checks writes only (see Mode).
package traffic
