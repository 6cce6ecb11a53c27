-- recoveryLeft decides whether a node is recovering under the restart
-- quarantine, and so withholds its vote. marker is the restart marker's value
-- ("redlock:marker"), false when it is absent; delay is the recovery delay in
-- microseconds, 0 when the quarantine is off; the node's clock is read
-- through shared (see clock.lua), and only when the marker holds a time.
-- Returns the microseconds the node stays recovering, 0 when it is not, and
-- nil when the marker is not a number. A node without the marker lost its
-- data or never served a lock: it is recovering for the whole delay, which
-- its next acquisition starts.
local function recoveryLeft(shared, marker, delay)
	if delay <= 0 then
		return 0
	end
	if not marker then
		return delay
	end
	local since = tonumber(marker)
	if not since then
		return nil
	end
	local t = nodeClock(shared)
	local left = since + delay - (tonumber(t[1]) * 1000000 + tonumber(t[2]))
	if left > 0 then
		return left
	end
	return 0
end
