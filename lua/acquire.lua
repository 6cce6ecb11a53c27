-- Takes a lock on one node: checks the restart quarantine, sets the lock key
-- if it is free, and bumps the key's fencing counter, all atomically.
-- KEYS[1] lock key; KEYS[2] fencing counter (FenceKey); KEYS[3] restart marker
-- (MarkerKey).
-- ARGV[1] token; ARGV[2] lock TTL in milliseconds; ARGV[3] recovery delay in
-- microseconds, "0" when the quarantine is off; ARGV[4] counter TTL in
-- milliseconds.
-- Returns {1, fence, 0} when granted, {0, 0, 0} when the key is held, and
-- {2, 0, microseconds left} while the node is recovering.
if redis.replicate_commands then
	redis.replicate_commands() -- Redis < 5: allow writes after TIME
end
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local nowString = t[1] .. string.format("%06d", tonumber(t[2]))

local delay = tonumber(ARGV[3])
if delay > 0 then
	local marker = redis.call("GET", KEYS[3])
	if not marker then
		-- The node lost its data, or never served a lock: start its quarantine.
		redis.call("SET", KEYS[3], nowString)
		return {2, 0, delay}
	end
	local since = tonumber(marker)
	if not since then
		return redis.error_reply("redlock: " .. KEYS[3] .. " is not a time in microseconds")
	end
	local left = since + delay - now
	if left > 0 then
		return {2, 0, left}
	end
end

local counter = redis.call("GET", KEYS[2])
if counter and not string.match(counter, "^%d+$") then
	return redis.error_reply("redlock: fencing counter " .. KEYS[2] .. " is not an integer")
end
if not redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
	return {0, 0, 0}
end
local fence
if counter then
	fence = redis.call("INCR", KEYS[2])
else
	-- A missing counter starts from this node's clock, above every token
	-- handed out before it was lost.
	fence = now
	redis.call("SET", KEYS[2], nowString)
end
redis.call("PEXPIRE", KEYS[2], ARGV[4])
return {1, fence, 0}
