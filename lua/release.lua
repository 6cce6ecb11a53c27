-- release deletes the lock key only while it still holds the caller's token,
-- and announces the release on the channel ARGV[a+2] followed by the key
-- (with the token as the message) unless ARGV[a+2] is empty. It reads its
-- request's keys and arguments at offsets k and a in KEYS and ARGV.
-- KEYS[k+1] lock key; ARGV[a+1] token; ARGV[a+2] release channel prefix or "".
-- Returns 1 when deleted, 0 otherwise.
local function release(KEYS, ARGV, k, a)
	if redis.call("GET", KEYS[k + 1]) == ARGV[a + 1] then
		redis.call("DEL", KEYS[k + 1])
		if ARGV[a + 2] ~= "" then
			redis.call("PUBLISH", ARGV[a + 2] .. KEYS[k + 1], ARGV[a + 1])
		end
		return 1
	end
	return 0
end
