-- Writes a fenced resource only when the caller's token is not below the
-- last token the resource accepted for a write, nor below the greatest token
-- it has served a fenced read (ReadFenced) or a shared read (ReadShared) to.
-- An equal token is the same lock's: its holder may write any number of times.
-- KEYS[1] resource hash (fields "value", "fence", "seen" and "shared");
-- ARGV[1] token, a decimal uint64 without leading zeros; ARGV[2] value.
-- Returns {1} when written, {0, the greater token} when refused.
--
-- Tokens are compared as decimal strings, longer first, because Lua numbers
-- are doubles and lose precision above 2^53.
local function less(a, b)
	return #a < #b or (#a == #b and a < b)
end
local token = ARGV[1]
local seen = redis.call("HMGET", KEYS[1], "fence", "seen", "shared")
for i = 1, 3 do
	if seen[i] and less(token, seen[i]) then
		return {0, seen[i]}
	end
end
redis.call("HSET", KEYS[1], "value", ARGV[2], "fence", token)
return {1}
