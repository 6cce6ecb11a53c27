-- setMarker sets the restart marker key ("redlock:marker") to value and its
-- process key ("redlock:process") to this process's run_id, and makes
-- restartMarker return them in the rest of the script call.
local function setMarker(shared, key, processKey, value)
	local id = processID(shared)
	redis.call("SET", key, value)
	redis.call("SET", processKey, id)
	shared.marker, shared.markerKey, shared.writer = value, key, id
end
