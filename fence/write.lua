-- Writes a fenced resource only when the caller's token is greater than the
-- last token the resource accepted.
-- KEYS[1] resource hash (fields "value" and "fence"); ARGV[1] token, a
-- decimal uint64 without leading zeros; ARGV[2] value.
-- Returns {1} when written, {0, last} when refused.
--
-- Tokens are compared as decimal strings, longer first, because Lua numbers
-- are doubles and lose precision above 2^53.
local last = redis.call("HGET", KEYS[1], "fence")
if last then
	local token = ARGV[1]
	if #token < #last or (#token == #last and token <= last) then
		return {0, last}
	end
end
redis.call("HSET", KEYS[1], "value", ARGV[2], "fence", ARGV[1])
return {1}
