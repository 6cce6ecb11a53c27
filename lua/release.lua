-- Deletes the lock key only while it still holds the caller's token.
-- KEYS[1] lock key; ARGV[1] token. Returns 1 when deleted, 0 otherwise.
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0
