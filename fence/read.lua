-- Reads a fenced resource for a holder that will write it back: refuses a
-- token below the last one written or read (fenced or shared), and records
-- the token as read, so that no older holder can write between this read
-- and its write.
-- KEYS[1] resource hash; ARGV[1] token, a decimal uint64 without leading zeros.
-- Returns {1, value or false} when served, {0, greater token} when refused.
local function less(a, b)
	return #a < #b or (#a == #b and a < b)
end
local token = ARGV[1]
local state = redis.call("HMGET", KEYS[1], "value", "fence", "seen", "shared")
for i = 2, 4 do
	if state[i] and less(token, state[i]) then
		return {0, state[i]}
	end
end
if not state[3] or less(state[3], token) then
	redis.call("HSET", KEYS[1], "seen", token)
end
return {1, state[1]}
