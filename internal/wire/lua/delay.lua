-- delayStands reports whether the lock key, holding token, is only kept
-- by its lock-delay now: the token carries a delay (see tokenDelay), and
-- the key has no more than that left, so its holder's TTL ran out on this
-- node. A release or extension of such a key would cut short the delay
-- that keeps the next holder out of a holder that overran its lock
-- (WithLockDelay).
local function delayStands(key, token)
	local delay = tokenDelay(token)
	return delay ~= nil and redis.call("PTTL", key) <= delay
end
