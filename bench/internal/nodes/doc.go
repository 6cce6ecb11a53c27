// Package nodes starts throw-away redis-server processes on loopback for the
// benchmark: no persistence, free ports, one temporary directory each.
//
// It repeats a small part of the library's internal test cluster, which a
// separate module cannot import.
package nodes
