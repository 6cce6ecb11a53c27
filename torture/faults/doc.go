// Package faults injects the faults of a torture run and records each one in
// the history: killing and restarting nodes (with or without their data,
// or with the append-only file a power loss leaves behind, and marking
// them ready as a deploy script would), pausing nodes and workers with
// SIGSTOP, slowing and partitioning the network through the proxies (whole
// minorities, one flapping node, one direction only, or a different
// minority per worker), moving a node's clock, and making nodes evict
// keys. On a Redis Cluster lock node (rediscluster.go, shardfailover.go)
// they restart the master of the lock key's slot, move the slot to another
// master, or fail the master over to a replica cut off beforehand.
//
// A Fault runs for the whole measured period of a scenario and undoes what
// it did when its context ends. Several can run at once. Faults that must
// hit a precise moment (a worker between its read and its write, a node
// while someone holds the lock on it) watch the history or the register as
// it is written instead of guessing from timers, so that a scenario
// reproduces its fault on every run.
//
// Clock faults need the clock shim (clockshim.c, built at run time with the
// system C compiler by BuildClockShim) preloaded into redis-server: Debian's
// libfaketime does not work with Debian's jemalloc-linked redis-server.
package faults
