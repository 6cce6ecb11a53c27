-- nextFence sets the fencing counter fenceKey ("redlock:fence:" + lock key), which held counter
-- (a decimal string, false when absent), to the fencing token of a new
-- acquisition, with a TTL of ttl milliseconds, and returns the token as a
-- decimal string. hint is the caller's clock in microseconds (decimal); t is
-- the node's TIME reply.
-- The new counter is the largest of: the old one plus one; the caller's clock
-- (hint, the same on every node, so that nodes that missed acquisitions agree
-- again); this node's clock, as the whole second before the current one (so
-- that it wins only when the caller's clock is more than a second behind, not
-- when a second ends between the caller's reading and this script). A lost
-- counter thus restarts above the tokens handed out before, which followed
-- the clocks too.
local function nextFence(fenceKey, counter, hint, ttl, t)
	local current = tonumber(counter or "0")
	local floorSeconds = tonumber(t[1]) - 1
	local floor = floorSeconds * 1000000
	local fence
	if tonumber(hint) > current and tonumber(hint) >= floor then
		fence = hint
	elseif floor > current then
		fence = string.format("%d000000", floorSeconds)
	else
		redis.call("INCR", fenceKey)
		redis.call("PEXPIRE", fenceKey, ttl)
		-- Read back as a string: exact even beyond 2^53, where Lua numbers are not.
		return redis.call("GET", fenceKey)
	end
	redis.call("SET", fenceKey, fence, "PX", ttl)
	return fence
end
