-- extend sets a new expiry on the lock key only while it still holds the
-- caller's token. It reads its request's keys and arguments at offsets k and
-- a in KEYS and ARGV.
-- KEYS[k+1] lock key; ARGV[a+1] token; ARGV[a+2] new TTL in milliseconds.
-- Returns 1 when extended, 0 otherwise.
local function extend(KEYS, ARGV, k, a)
	if redis.call("GET", KEYS[k + 1]) == ARGV[a + 1] then
		return redis.call("PEXPIRE", KEYS[k + 1], ARGV[a + 2])
	end
	return 0
end
