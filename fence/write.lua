-- Writes a fenced resource only when the caller's token is greater than the
-- last token the resource accepted for a write, and not below the greatest
-- token it has served a fenced read (ReadFenced) or a shared read
-- (ReadShared) to.
-- KEYS[1] resource hash (fields "value", "fence", "seen" and "shared");
-- ARGV[1] token,
-- a decimal uint64 without leading zeros; ARGV[2] value.
-- Returns {1} when written, {0, last} when refused.
--
-- Tokens are compared as decimal strings, longer first, because Lua numbers
-- are doubles and lose precision above 2^53.
local function less(a, b)
	return #a < #b or (#a == #b and a < b)
end
local token = ARGV[1]
local last = redis.call("HGET", KEYS[1], "fence")
if last and not less(last, token) then
	return {0, last}
end
for _, field in ipairs({"seen", "shared"}) do
	local read = redis.call("HGET", KEYS[1], field)
	if read and less(token, read) then
		return {0, read}
	end
end
redis.call("HSET", KEYS[1], "value", ARGV[2], "fence", token)
return {1}
