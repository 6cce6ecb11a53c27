package nodecheck

import (
	"context"
	"fmt"
	"strings"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/internal/wire"
)

// aclCheck is a script that runs nothing: it asks the node, by
// redis.acl_check_cmd (Redis 7.0 and later), which of the commands in
// ARGV, each with its arguments (see commandArgs) as one string split at
// spaces, its user may not run, and which it does not know (renamed away).
// It writes nothing, so a node that pauses writes runs it.
const aclCheck = `#!lua flags=no-writes
local refused, unknown = {}, {}
for _, call in ipairs(ARGV) do
	local args = {}
	for word in string.gmatch(call, "%S+") do
		table.insert(args, word)
	end
	local known, allowed = pcall(redis.acl_check_cmd, unpack(args))
	if not known then
		table.insert(unknown, args[1])
	elseif not allowed then
		table.insert(refused, args[1])
	end
end
return {refused, unknown}`

// runCheck is the check where the node has no acl_check_cmd (Redis 6.2):
// a script that runs each command in ARGV, as aclCheck reads them, by
// pcall, and returns those refused to the user and those unknown. Only
// commands that change nothing on probeKey, which does not exist, are
// sent: those that would create it (SET, INCR, ZADD, HSET) are left out,
// and an acquisition refused them fails at once anyway.
const runCheck = `local refused, unknown = {}, {}
local creates = {SET = true, INCR = true, ZADD = true, HSET = true}
for _, call in ipairs(ARGV) do
	local args = {}
	for word in string.gmatch(call, "%S+") do
		table.insert(args, word)
	end
	if not creates[args[1]] then
		local reply = redis.pcall(unpack(args))
		local err = type(reply) == "table" and reply.err
		if err and string.find(err, "Unknown", 1, true) then
			table.insert(unknown, args[1])
		elseif err and (string.find(err, "can't", 1, true) or string.find(err, "NOPERM", 1, true)) then
			table.insert(refused, args[1])
		end
	end
end
return {refused, unknown}`

// probeKey is the key the check names to each command: one of the
// library's own (wire.KeyPrefix), which its scripts need the user to read
// and write beside the locks' own names.
const probeKey = wire.KeyPrefix + "probe"

// commandArgs are the arguments each command of wire.LockCommands is
// checked with: as many as it takes, on probeKey, so that the check
// weighs the key patterns of the user's ACL too. A command given too few
// crashes Redis 7.0's acl_check_cmd (redis/redis#14843), and later
// releases refuse it.
var commandArgs = map[string]string{
	"DEL": "k", "EXISTS": "k", "GET": "k", "HDEL": "k f", "HGET": "k f", "HMGET": "k f", "HSET": "k f v",
	"INCR": "k", "MGET": "k", "PEXPIRE": "k 1", "PEXPIREAT": "k 1", "PTTL": "k", "SET": "k v", "TIME": "",
	"TYPE": "k", "ZADD": "k 1 m", "ZRANGE": "k 0 1", "ZRANGEBYSCORE": "k 0 1", "ZRANK": "k m", "ZREM": "k m",
	"ZREMRANGEBYSCORE": "k 0 1", "ZSCORE": "k m",
}

// commandCalls returns each command of wire.LockCommands with its
// arguments (see commandArgs), as aclCheck reads them, and the commands
// that have none there.
func commandCalls() (calls, unchecked []string) {
	for _, cmd := range wire.LockCommands() {
		args, ok := commandArgs[cmd]
		if !ok {
			unchecked = append(unchecked, cmd)
			continue
		}
		calls = append(calls, strings.TrimSpace(cmd+" "+strings.ReplaceAll(" "+args, " k", " "+probeKey)))
	}
	return calls, unchecked
}

// commandRefusal returns why the node's scripts would fail for its URL's
// user: a command they run (wire.LockCommands) that the user may not run
// on the library's keys, or that the server does not know
// (rename-command). Some fail only at a release, after the lock was
// granted, which would leave it locked for its TTL; the others fail every
// acquisition. Where the node has no acl_check_cmd (Redis 6.2), it runs
// those of the commands that change nothing instead (see runCheck). It
// returns nil when the user may run them all, or the check fails
// otherwise.
func commandRefusal(ctx context.Context, conn redlock.Conn) error {
	calls, _ := commandCalls()
	v, err := conn.Do(ctx, append([]string{"EVAL", aclCheck, "0"}, calls...)...)
	if err != nil && (strings.Contains(err.Error(), "Error compiling script") || strings.Contains(err.Error(), "acl_check_cmd")) {
		// Redis 6.2: no script flags, no acl_check_cmd.
		v, err = conn.Do(ctx, append([]string{"EVAL", runCheck, "0"}, calls...)...)
	}
	lists, ok := v.([]any)
	if err != nil || !ok || len(lists) != 2 {
		return nil
	}
	refused, unknown := strs(lists[0]), strs(lists[1])
	switch {
	case len(refused) > 0:
		return fmt.Errorf("the user may not run %s on the library's keys (%s…), which the scripts that take and release "+
			"locks run: a lock could be granted and never released; grant them, as in ACL SETUSER <user> +%s ~%s*",
			strings.Join(refused, ", "), wire.KeyPrefix, strings.ToLower(strings.Join(refused, " +")), wire.KeyPrefix)
	case len(unknown) > 0:
		return fmt.Errorf("the server knows no %s, which the scripts that take and release locks run: "+
			"restore it on the server (rename-command)", strings.Join(unknown, ", "))
	}
	return nil
}

// strs returns the strings of v, a reply's array.
func strs(v any) []string {
	a, _ := v.([]any)
	out := make([]string, 0, len(a))
	for _, e := range a {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
