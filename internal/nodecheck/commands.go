package nodecheck

import (
	"context"
	"fmt"
	"strings"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/internal/wire"
)

// aclCheck is a script that runs nothing: it asks the node, by
// redis.acl_check_cmd (Redis 7.0 and later), which of the commands in ARGV
// its user may not run, and which it does not know (renamed away). It
// writes nothing, so a node that pauses writes runs it.
const aclCheck = `#!lua flags=no-writes
local refused, unknown = {}, {}
for _, cmd in ipairs(ARGV) do
	local known, allowed = pcall(redis.acl_check_cmd, cmd)
	if not known then
		table.insert(unknown, cmd)
	elseif not allowed then
		table.insert(refused, cmd)
	end
end
return {refused, unknown}`

// commandRefusal returns why the node's scripts would fail for its URL's
// user: a command they run (wire.LockCommands) that the user may not run,
// or that the server does not know (rename-command). Some fail only at a
// release, after the lock was granted, which would leave it locked for its
// TTL; the others fail every acquisition. It returns nil when the user may
// run them all, and where the node cannot tell (Redis 6.2 has no
// acl_check_cmd), or the check fails otherwise.
func commandRefusal(ctx context.Context, conn redlock.Conn) error {
	v, err := conn.Do(ctx, append([]string{"EVAL", aclCheck, "0"}, wire.LockCommands()...)...)
	lists, ok := v.([]any)
	if err != nil || !ok || len(lists) != 2 {
		return nil
	}
	refused, unknown := strs(lists[0]), strs(lists[1])
	switch {
	case len(refused) > 0:
		return fmt.Errorf("the user may not run %s, which the scripts that take and release locks run: a lock "+
			"could be granted and never released; grant them, as in ACL SETUSER <user> +%s",
			strings.Join(refused, ", "), strings.ToLower(strings.Join(refused, " +")))
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
