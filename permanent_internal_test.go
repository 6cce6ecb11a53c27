package redlock

import (
	"errors"
	"testing"
)

// The errors no retry fixes are told apart from those that pass: loading,
// busy scripts, resharding, failovers, timeouts.
func TestIsPermanent(t *testing.T) {
	for msg, want := range map[string]bool{
		"NOPERM this user has no permissions to access one of the keys used as arguments":                                           true,
		"WRONGPASS invalid username-password pair or user is disabled.":                                                             true,
		"READONLY You can't write against a read only replica.":                                                                     true,
		"ERR Error running script (call to f_1): @user_script:1: WRONGTYPE Operation against a key holding the wrong kind of value": true,
		"CROSSSLOT Keys in request don't hash to the same slot":                                                                     true,
		"ERR unknown command 'evalsha', with args beginning with: ":                                                                 true,
		"redlock: fencing counter redlock:fence:k is not an integer":                                                                true,
		"LOADING Redis is loading the dataset in memory":                                                                            false,
		"BUSY Redis is busy running a script.":                                                                                      false,
		"TRYAGAIN Multiple keys request during rehashing of slot":                                                                   false,
		"MOVED 3999 127.0.0.1:6381":                                                                                                 false,
		"CLUSTERDOWN The cluster is down":                                                                                           false,
		"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.":                                          false,
		"dial tcp 127.0.0.1:1: connect: connection refused":                                                                         false,
		"context deadline exceeded":                                                                                                 false,
	} {
		if got := isPermanent(errors.New(msg)); got != want {
			t.Errorf("isPermanent(%q) = %v, want %v", msg, got, want)
		}
	}
}
