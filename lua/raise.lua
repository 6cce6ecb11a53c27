-- raise raises the lock key's fencing counter to at least a token, and
-- reports whether the lock key still holds the caller's token. Raising a
-- counter is always safe (later tokens only grow), so it is done either way;
-- only a node that still holds the lock counts towards the quorum that
-- carries the token. It reads its request's keys and arguments at offsets k
-- and a in KEYS and ARGV.
-- KEYS[k+1] lock key; KEYS[k+2] fencing counter ("redlock:fence:" + lock key).
-- ARGV[a+1] token; ARGV[a+2] fencing token (decimal, no leading zeros);
-- ARGV[a+3] counter TTL in milliseconds.
-- Returns 1 when the lock key holds ARGV[a+1], 0 otherwise; the counter is
-- at least ARGV[a+2] afterwards in both cases.
local function raise(KEYS, ARGV, k, a)
	local counter = redis.call("GET", KEYS[k + 2])
	if counter and not string.match(counter, "^%d+$") then
		return redis.error_reply("redlock: fencing counter " .. KEYS[k + 2] .. " is not an integer")
	end
	-- Compared as decimal strings, exact at any size: a shorter one is smaller.
	local token = ARGV[a + 2]
	if not counter or #counter < #token or (#counter == #token and counter < token) then
		redis.call("SET", KEYS[k + 2], token, "PX", ARGV[a + 3])
	end
	if redis.call("GET", KEYS[k + 1]) == ARGV[a + 1] then
		return 1
	end
	return 0
end
