-- restartMarker returns the value of the restart marker key ("redlock:marker"),
-- false when it is absent, read once per script call: shared, the table that
-- the requests of one script call share, keeps it as shared.marker with its
-- key as shared.markerKey (see set_marker.lua).
local function restartMarker(shared, key)
	if shared.markerKey ~= key then
		shared.marker, shared.markerKey = redis.call("GET", key), key
	end
	return shared.marker
end
