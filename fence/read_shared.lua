-- Reads a fenced resource for a reader of a read-write lock: refuses a
-- token below the last one written or read for a write (ReadFenced), since
-- a writer took the lock after this reader's grant, and records the
-- greatest token served a shared read, so that no older writer can write
-- while this reader may still read. Readers do not refuse one another.
-- KEYS[1] resource hash; ARGV[1] token, a decimal uint64 without leading zeros.
-- Returns {1, value or false} when served, {0, greater token} when refused.
local function less(a, b)
	return #a < #b or (#a == #b and a < b)
end
local token = ARGV[1]
local state = redis.call("HMGET", KEYS[1], "value", "fence", "seen", "shared")
for i = 2, 3 do
	if state[i] and less(token, state[i]) then
		return {0, state[i]}
	end
end
if not state[4] or less(state[4], token) then
	redis.call("HSET", KEYS[1], "shared", token)
end
return {1, state[1]}
