-- reclaim takes a lock that a quorum holds on one more node, where the key
-- is free: a renewal asks the nodes that answered its extension without
-- holding the lock (see Lock.reclaim in the Go code). The node admits it
-- as it does an acquisition (see admit.lua: the restart quarantine, a key
-- that holds the caller's token already) and sets the key to the caller's
-- token; the key's fencing counter is raised to the lock's fencing token,
-- not bumped past it, so that the node holds the lock with the counter of
-- the nodes that granted it, unless its counter was above that already.
-- It reads its request's keys and arguments at offsets k and a in KEYS and
-- ARGV; shared is the table that the requests of one script call share.
-- KEYS and ARGV[a+1] to ARGV[a+5] as acquire.lua's; ARGV[a+6] the lock's
-- fencing token (decimal, no leading zeros).
-- Returns 1 when the key holds the caller's token, 0 otherwise.
local function reclaim(KEYS, ARGV, k, a, shared)
	local refused, counter, _, held = admit(KEYS, ARGV, k, a, shared)
	if refused then
		-- The key holds the caller's token already (1), the node
		-- recovers (2), or the counter is no counter (an error).
		if refused[1] == 1 then
			return 1
		end
		return refused.err and refused or 0
	end
	if held or not redis.call("SET", KEYS[k + 1], ARGV[a + 1], "NX", "PX", ARGV[a + 2]) then
		return 0
	end
	if not raiseFence(KEYS[k + 2], counter, ARGV[a + 6], ARGV[a + 4], shared) then
		redis.call("DEL", KEYS[k + 1]) -- a key of another type: no counter
		return 0
	end
	if redis.call("PTTL", KEYS[k + 2]) < tonumber(ARGV[a + 4]) then
		redis.call("PEXPIRE", KEYS[k + 2], ARGV[a + 4])
	end
	return 1
end
