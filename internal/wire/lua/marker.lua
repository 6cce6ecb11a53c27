-- restartMarker returns the value of the restart marker key ("redlock:marker")
-- and of its process key ("redlock:process": the run_id of the process that
-- wrote the marker), false when absent, both read once per script call:
-- shared, the table that the requests of one script call share, keeps them
-- with the marker's key (see set_marker.lua).
local function restartMarker(shared, key, processKey)
	if shared.markerKey ~= key then
		shared.marker, shared.markerKey = redis.call("GET", key), key
		shared.writer = redis.call("GET", processKey)
	end
	return shared.marker, shared.writer
end
