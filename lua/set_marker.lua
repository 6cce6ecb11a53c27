-- setMarker sets the restart marker key ("redlock:marker") to value, and makes
-- restartMarker return value for it in the rest of the script call.
local function setMarker(shared, key, value)
	redis.call("SET", key, value)
	shared.marker, shared.markerKey = value, key
end
