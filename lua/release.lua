-- Deletes the lock key only while it still holds the caller's token, and
-- announces the release on the channel ARGV[2] followed by the key (with the
-- token as the message) unless ARGV[2] is empty.
-- KEYS[1] lock key; ARGV[1] token; ARGV[2] release channel prefix or "".
-- Returns 1 when deleted, 0 otherwise.
if redis.call("GET", KEYS[1]) == ARGV[1] then
	redis.call("DEL", KEYS[1])
	if ARGV[2] ~= "" then
		redis.call("PUBLISH", ARGV[2] .. KEYS[1], ARGV[1])
	end
	return 1
end
return 0
