-- Deletes the lock key only while it still holds the caller's token, and
-- tells waiting clients on ARGV[2] that the lock is free.
-- KEYS[1] lock key; ARGV[1] token; ARGV[2] release channel.
-- Returns 1 when deleted, 0 otherwise.
if redis.call("GET", KEYS[1]) == ARGV[1] then
	redis.call("DEL", KEYS[1])
	redis.call("PUBLISH", ARGV[2], "")
	return 1
end
return 0
