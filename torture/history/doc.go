// Package history records what happened during a torture run: every
// operation a worker invoked and how it completed, every read and write the
// register served, and every fault the harness injected, as JSON lines.
//
// All timestamps come from CLOCK_MONOTONIC (Now), which every process on the
// host shares, so events written by separate worker processes and by the
// harness can be merged into one timeline without clock skew between them.
// A worker stamps its own events; the harness merges them as they arrive.
package history
