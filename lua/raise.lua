-- Raises the lock key's fencing counter to at least a token, and reports
-- whether the lock key still holds the caller's token. Raising a counter is
-- always safe (later tokens only grow), so it is done either way; only a node
-- that still holds the lock counts towards the quorum that carries the token.
-- KEYS[1] lock key; KEYS[2] fencing counter (FenceKey).
-- ARGV[1] token; ARGV[2] fencing token (decimal, no leading zeros); ARGV[3]
-- counter TTL in milliseconds.
-- Returns 1 when the lock key holds ARGV[1], 0 otherwise; the counter is at
-- least ARGV[2] afterwards in both cases.
local counter = redis.call("GET", KEYS[2])
if counter and not string.match(counter, "^%d+$") then
	return redis.error_reply("redlock: fencing counter " .. KEYS[2] .. " is not an integer")
end
-- Compared as decimal strings, exact at any size: a shorter one is smaller.
if not counter or #counter < #ARGV[2] or (#counter == #ARGV[2] and counter < ARGV[2]) then
	redis.call("SET", KEYS[2], ARGV[2], "PX", ARGV[3])
end
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return 1
end
return 0
