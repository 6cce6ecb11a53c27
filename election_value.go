package redlock

import "time"

// withValue records a candidate's value with its lock, where the nodes
// show it to every reader of the election (see valueOf).
func withValue(value string) LockOption {
	return lockOption(func(*lockConfig) {})
}

// valueOf returns the value and the election time that a node holds for the
// leader whose lock it holds, and whether it holds them.
func valueOf(s NodeState) (value string, since time.Time, ok bool) {
	return "", time.Time{}, false
}
