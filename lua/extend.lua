-- Sets a new expiry on the lock key only while it still holds the caller's token.
-- KEYS[1] lock key; ARGV[1] token; ARGV[2] new TTL in milliseconds.
-- Returns 1 when extended, 0 otherwise.
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
