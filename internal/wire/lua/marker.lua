-- restartMarker returns the value of the restart marker key ("redlock:marker")
-- and of its process key ("redlock:process": the run_id of the process that
-- wrote the marker), false when absent, both read once per script call:
-- shared, the table that the requests of one script call share, keeps them
-- with the marker's key (see set_marker.lua).
local function restartMarker(shared, key, processKey)
	if shared.markerKey ~= key then
		-- One MGET: the two keys lie in one slot (see Layout.MarkerKeys).
		local both = redis.call("MGET", key, processKey)
		shared.marker, shared.markerKey, shared.writer = both[1], key, both[2]
	end
	return shared.marker, shared.writer
end
