-- extend sets a new expiry on the lock key only while it still holds the
-- caller's token, or on the caller's token among the key's readers (see
-- readers.lua). It reads its request's keys and arguments at offsets k and
-- a in KEYS and ARGV; shared is the table that the requests of one script
-- call share (see acquire.lua).
-- KEYS[k+1] lock key; ARGV[a+1] token; ARGV[a+2] new TTL in milliseconds.
-- Returns 1 when extended, 0 otherwise.
local function extend(KEYS, ARGV, k, a, shared)
	-- pcall: GET fails on the readers' sorted set.
	local holder = redis.pcall("GET", KEYS[k + 1])
	if holder == ARGV[a + 1] then
		return redis.call("PEXPIRE", KEYS[k + 1], ARGV[a + 2])
	end
	if type(holder) == "table" and holder.err and extendShared(KEYS[k + 1], ARGV[a + 1], ARGV[a + 2], shared) then
		return 1
	end
	return 0
end
