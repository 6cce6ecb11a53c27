-- acquire takes a lock on one node: checks the restart quarantine, sets the
-- lock key if it is free, and bumps the key's fencing counter, all atomically.
-- It reads its request's keys and arguments at offsets k and a in KEYS and
-- ARGV; shared is the table that the requests of one script call share, so
-- that the node's clock and restart marker are read once per script call.
-- KEYS[k+1] lock key; KEYS[k+2] fencing counter ("redlock:fence:" + lock
-- key); KEYS[k+3] restart marker ("redlock:marker"); KEYS[k+4] the marker's
-- process key ("redlock:process").
-- ARGV[a+1] token; ARGV[a+2] lock TTL in milliseconds; ARGV[a+3] recovery
-- delay in microseconds, "0" when the quarantine is off; ARGV[a+4] counter
-- TTL in milliseconds; ARGV[a+5] the caller's clock in microseconds
-- (decimal).
-- Returns {1, fence, 0} when granted (also to a repeated run of a granted
-- request: see admit), {0, "0", 0} when the key is held (by another lock,
-- or by readers: see acquire_shared.lua), an error when it holds another
-- type of data without an expiry (see notALock), and {2, "0", microseconds
-- left}
-- while the node is recovering; fence is the new counter, a decimal string
-- (see fence.lua).
-- grant is acquire once admit let the acquisition through, with the
-- counter admit read, and whether it found the key held by a lock, which
-- refuses without trying to set it. A key that holds no string (admit
-- read it as absent) and has no expiry is no lock: an error (see
-- notALock).
local function grant(KEYS, ARGV, k, a, shared, counter, held)
	if held then
		return {0, "0", 0}
	end
	if not redis.call("SET", KEYS[k + 1], ARGV[a + 1], "NX", "PX", ARGV[a + 2]) then
		return notALock(KEYS[k + 1]) or {0, "0", 0}
	end
	local fence = nextFence(KEYS[k + 2], counter, ARGV[a + 5], ARGV[a + 4], shared)
	if not fence then
		redis.call("DEL", KEYS[k + 1])
		return brokenCounter(KEYS[k + 2])
	end
	return {1, fence, 0}
end

local function acquire(KEYS, ARGV, k, a, shared)
	local refused, counter, _, held = admit(KEYS, ARGV, k, a, shared)
	if refused then
		return refused
	end
	return grant(KEYS, ARGV, k, a, shared, counter, held)
end
