-- nodeClock returns the node's TIME reply, {seconds, microseconds} as
-- strings, read once per script call: shared, the table that the requests of
-- one script call share, keeps it as shared.time.
local function nodeClock(shared)
	local t = shared.time
	if not t then
		t = redis.call("TIME")
		shared.time = t
	end
	return t
end
