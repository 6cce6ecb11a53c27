-- delayStands reports whether the lock key, holding token, is only kept
-- by its lock-delay now: the token carries a delay ("+" and milliseconds
-- after its TTL, see AttemptStrings), and the key has no more than that
-- left, so its holder's TTL ran out on this node. A release or extension
-- of such a key would cut short the delay that keeps the next holder out
-- of a holder that overran its lock (WithLockDelay). A token without a
-- delay costs one search for "+".
local function delayStands(key, token)
	if not string.find(token, "+", 1, true) then
		return false
	end
	local delay = tonumber(string.match(token, "%+(%d+)$"))
	return delay ~= nil and redis.call("PTTL", key) <= delay
end
