-- nodeMillis returns the node's clock in milliseconds, read through shared
-- (see clock.lua).
local function nodeMillis(shared)
	local t = nodeClock(shared)
	return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
