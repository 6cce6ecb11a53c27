package nodecheck

import (
	"errors"
	"testing"
)

// Configuration errors are known with or without the "ERR " that rueidis
// strips from server errors; transient ones are not taken for them.
func TestIsConfigError(t *testing.T) {
	for msg, want := range map[string]bool{
		"WRONGPASS invalid username-password pair or user is disabled.": true,
		"NOAUTH Authentication required.":                               true,
		"ERR DB index is out of range":                                  true,
		"DB index is out of range":                                      true,
		"ERR This instance has cluster support disabled":                true,
		"This instance has cluster support disabled":                    true,
		"ERR unknown command 'EVALSHA'":                                 true,
		"DENIED Redis is running in protected mode":                     true,
		"LOADING Redis is loading the dataset in memory":                false,
		"dial tcp 127.0.0.1:1: connect: connection refused":             false,
		"context deadline exceeded":                                     false,
	} {
		if got := isConfigError(errors.New(msg)); got != want {
			t.Errorf("isConfigError(%q) = %v, want %v", msg, got, want)
		}
	}
}
