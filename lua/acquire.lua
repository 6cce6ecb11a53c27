-- Takes a lock on one node: checks the restart quarantine, sets the lock key
-- if it is free, and bumps the key's fencing counter, all atomically.
-- KEYS[1] lock key; KEYS[2] fencing counter (FenceKey); KEYS[3] restart marker
-- (MarkerKey).
-- ARGV[1] token; ARGV[2] lock TTL in milliseconds; ARGV[3] recovery delay in
-- microseconds, "0" when the quarantine is off; ARGV[4] counter TTL in
-- milliseconds; ARGV[5] the caller's clock in microseconds (decimal).
-- Returns {1, fence, 0} when granted, {0, "0", 0} when the key is held, and
-- {2, "0", microseconds left} while the node is recovering; fence is the
-- new counter, a decimal string.
-- The node's clock and restart marker are read once per script call: the
-- batch script gives the requests it runs one `shared` table (the line
-- below is rewritten there; see newBatchScript).
local shared = {}
if redis.replicate_commands then
	redis.replicate_commands() -- Redis < 5: allow writes after TIME
end
local t = shared.time
if not t then
	t = redis.call("TIME")
	shared.time = t
end
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local delay = tonumber(ARGV[3])
if delay > 0 then
	local marker = shared.marker
	if marker == nil or shared.markerKey ~= KEYS[3] then
		marker = redis.call("GET", KEYS[3])
		shared.marker, shared.markerKey = marker, KEYS[3]
	end
	if not marker then
		-- The node lost its data, or never served a lock: start its quarantine.
		marker = t[1] .. string.format("%06d", tonumber(t[2]))
		redis.call("SET", KEYS[3], marker)
		shared.marker = marker
		return {2, "0", delay}
	end
	local since = tonumber(marker)
	if not since then
		return redis.error_reply("redlock: " .. KEYS[3] .. " is not a time in microseconds")
	end
	local left = since + delay - now
	if left > 0 then
		return {2, "0", left}
	end
end

local counter = redis.call("GET", KEYS[2])
if counter and not string.match(counter, "^%d+$") then
	return redis.error_reply("redlock: fencing counter " .. KEYS[2] .. " is not an integer")
end
if not redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
	return {0, "0", 0}
end
-- The new counter is the largest of: the old one plus one; the caller's clock
-- (ARGV[5], the same on every node, so that nodes that missed acquisitions
-- agree again); this node's clock, as the whole second before the current
-- one (so that it wins only when the caller's clock is more than a second
-- behind, not when a second ends between the caller's reading and this
-- script). A lost counter thus restarts above the tokens handed out before,
-- which followed the clocks too.
local current = tonumber(counter or "0")
local hint = tonumber(ARGV[5])
local floorSeconds = tonumber(t[1]) - 1
local floor = floorSeconds * 1000000
local fence
if hint > current and hint >= floor then
	fence = ARGV[5]
elseif floor > current then
	fence = string.format("%d000000", floorSeconds)
else
	redis.call("INCR", KEYS[2])
	redis.call("PEXPIRE", KEYS[2], ARGV[4])
	-- Read back as a string: exact even beyond 2^53, where Lua numbers are not.
	return {1, redis.call("GET", KEYS[2]), 0}
end
redis.call("SET", KEYS[2], fence, "PX", ARGV[4])
return {1, fence, 0}
