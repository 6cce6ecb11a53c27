-- Deletes the lock key only while it still holds the caller's token, and
-- announces the release on ARGV[2] (with the token as the message) unless
-- ARGV[2] is empty.
-- KEYS[1] lock key; ARGV[1] token; ARGV[2] release channel or "".
-- Returns 1 when deleted, 0 otherwise.
if redis.call("GET", KEYS[1]) == ARGV[1] then
	redis.call("DEL", KEYS[1])
	if ARGV[2] ~= "" then
		redis.call("PUBLISH", ARGV[2], ARGV[1])
	end
	return 1
end
return 0
