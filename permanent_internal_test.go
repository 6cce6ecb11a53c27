package redlock

import (
	"errors"
	"fmt"
	"testing"
)

// The errors no retry fixes are told apart from those that pass: loading,
// busy scripts, resharding, failovers, timeouts.
func TestIsPermanent(t *testing.T) {
	for msg, want := range map[string]bool{
		"NOPERM this user has no permissions to access one of the keys used as arguments":                                            true,
		"WRONGPASS invalid username-password pair or user is disabled.":                                                              true,
		"READONLY You can't write against a read only replica.":                                                                      true,
		"ERR Error running script (call to f_1): @user_script:1: WRONGTYPE Operation against a key holding the wrong kind of value":  true,
		"CROSSSLOT Keys in request don't hash to the same slot":                                                                      true,
		"ERR unknown command 'evalsha', with args beginning with: ":                                                                  true,
		"redlock: fencing counter redlock:fence:k is no fencing counter (a whole number from 0 that INCR can raise, below 2^63 - 1)": true,
		"LOADING Redis is loading the dataset in memory":                                                                             false,
		"BUSY Redis is busy running a script.":                                                                                       false,
		"TRYAGAIN Multiple keys request during rehashing of slot":                                                                    false,
		"MOVED 3999 127.0.0.1:6381":                                                                                                  false,
		"CLUSTERDOWN The cluster is down":                                                                                            false,
		"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.":                                           false,
		"dial tcp 127.0.0.1:1: connect: connection refused":                                                                          false,
		"context deadline exceeded":                                                                                                  false,
	} {
		if got := isPermanent(errors.New(msg)); got != want {
			t.Errorf("isPermanent(%q) = %v, want %v", msg, got, want)
		}
	}
}

// scriptSHA is the SHA1 of a script as the errors of a failed script name it.
const scriptSHA = "7c1ab5f5e4a0ad6c7d85dd2e8d4ae6fd91e8a1ef"

// Redis 6.2 wraps the error a script's command meets in the script's own
// error, with where it happened, once (an error the command replied) or
// twice with a '-' before the code (a command the script's call refused to
// run: a write on a replica, an out-of-memory node), or gives none (an ACL
// refusal); the batch script's pcall returns it without the outer
// wrapping, and rueidis without the outer ERR. Its code decides, as on
// Redis 7.x, whose replies say it first.
func TestIsPermanent_scriptErrors(t *testing.T) {
	wrapped := "ERR Error running script (call to f_" + scriptSHA + "): "
	for _, tc := range []struct {
		msg  string
		code string
		want bool
	}{
		// Redis 6.2, from the script's EVALSHA.
		{wrapped + "@user_script:14: @user_script: 14: -READONLY You can't write against a read only replica.", "READONLY", true},
		{wrapped + "@user_script:14: @user_script: 14: -READONLY You can't write against a read only replica.   ", "READONLY", true},
		{wrapped + "@user_script:9: @user_script: 9: The user executing the script can't run this command or subcommand", "NOPERM", true},
		{wrapped + "@user_script:9: @user_script: 9: The user executing the script can't access at least one of the keys mentioned in the command arguments", "NOPERM", true},
		{wrapped + "@user_script:21: WRONGTYPE Operation against a key holding the wrong kind of value", "WRONGTYPE", true},
		{wrapped + "@user_script:3: @user_script: 3: Unknown Redis command called from Lua script", "", true},
		{wrapped + "@user_script:30: @user_script: 30: -OOM command not allowed when used memory > 'maxmemory'.", "OOM", false},
		{wrapped + "@user_script:30: @user_script: 30: -MISCONF Errors writing to the AOF file: No space left on device", "MISCONF", false},
		{wrapped + "@user_script:5: user_script:5: attempt to compare nil with number", "", false},
		// Redis 6.2, from the script's EVALSHA, as rueidis returns it:
		// without the code ERR.
		{wrapped[len("ERR "):] + "@user_script:185: @user_script: 185: -READONLY You can't write against a read only replica.", "READONLY", true},
		{wrapped[len("ERR "):] + "@user_script:128: WRONGTYPE Operation against a key holding the wrong kind of value", "WRONGTYPE", true},
		{wrapped[len("ERR "):] + "@user_script:9: @user_script: 9: The user executing the script can't run this command or subcommand", "NOPERM", true},
		{wrapped[len("ERR "):] + "@user_script:30: @user_script: 30: -OOM command not allowed when used memory > 'maxmemory'.", "OOM", false},
		// Redis 6.2, a request of the batch script.
		{"@user_script: 14: -READONLY You can't write against a read only replica.  ", "READONLY", true},
		{"@user_script: 9: The user executing the script can't access at least one of the keys mentioned in the command arguments", "NOPERM", true},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", "WRONGTYPE", true},
		// Redis 6.2 and 7.x, refused before the script ran.
		{"CROSSSLOT Keys in request don't hash to the same slot", "CROSSSLOT", true},
		{"NOPERM this user has no permissions to access one of the keys used as arguments", "NOPERM", true},
		{"MOVED 3999 127.0.0.1:6381", "MOVED", false},
		{"ASK 3999 127.0.0.1:6381", "ASK", false},
		{"TRYAGAIN Multiple keys request during rehashing of slot", "TRYAGAIN", false},
		{"LOADING Redis is loading the dataset in memory", "LOADING", false},
		{"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.", "BUSY", false},
		{"CLUSTERDOWN Hash slot not served", "CLUSTERDOWN", false},
		// Redis 7.0.
		{"READONLY You can't write against a read only replica. script: " + scriptSHA + ", on @user_script:14.", "READONLY", true},
		{"WRONGTYPE Operation against a key holding the wrong kind of value script: " + scriptSHA + ", on @user_script:21.", "WRONGTYPE", true},
		{"ERR The user executing the script can't access at least one of the keys mentioned in the command arguments script: " + scriptSHA + ", on @user_script:9.", "NOPERM", true},
		{"ERR Unknown Redis command called from script script: " + scriptSHA + ", on @user_script:3.", "ERR", true},
		{"ERR user_script:5: attempt to compare nil with number script: " + scriptSHA + ", on @user_script:5.", "ERR", false},
		// Valkey 8, which words them its own way (rueidis drops the "ERR ").
		{"ERR ACL failure in script: User notime has no permissions to run the 'time' command script: redlock_35737d7a20e2_queuedAcquire, on @user_function:31.", "NOPERM", true},
		{"ACL failure in script: No permissions to access a key script: " + scriptSHA + ", on @user_script:9.", "NOPERM", true},
		{"ERR Unknown command called from script script: redlock_35737d7a20e2_queuedAcquire, on @user_function:12.", "ERR", true},
		// Not a server's reply.
		{"dial tcp 127.0.0.1:1: connect: connection refused", "", false},
		{"context deadline exceeded", "", false},
	} {
		if got := errorCode(tc.msg); got != tc.code {
			t.Errorf("errorCode(%q) = %q, want %q", tc.msg, got, tc.code)
		}
		if got := isPermanent(errors.New(tc.msg)); got != tc.want {
			t.Errorf("isPermanent(%q) = %v, want %v", tc.msg, got, tc.want)
		}
		if got := isPermanent(fmt.Errorf("node 127.0.0.1:6379: %w", errors.New(tc.msg))); got != tc.want {
			t.Errorf("isPermanent of a wrapped %q = %v, want %v", tc.msg, got, tc.want)
		}
	}
}
