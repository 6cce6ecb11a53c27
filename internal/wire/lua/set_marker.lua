-- setMarker sets the restart marker key ("redlock:marker") to value and its
-- process key ("redlock:process") to this process's run_id, followed by
-- " restart" when a restart or failover started the quarantine (see
-- quarantine.lua), and makes restartMarker return them in the rest of the
-- script call.
local function setMarker(shared, key, processKey, value, afterRestart)
	local writer = processID(shared)
	if afterRestart then
		writer = writer .. " restart"
	end
	redis.call("SET", key, value)
	redis.call("SET", processKey, writer)
	shared.marker, shared.markerKey, shared.writer = value, key, writer
end
