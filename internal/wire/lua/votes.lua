-- voters remembers, by marker key, the restart marker and writer that this
-- process last found out of quarantine, and for which recovery delay (see
-- quarantine.lua): {marker, writer, delay}. In the function library (see
-- library.go) it lasts as long as the process keeps the library loaded; in
-- a script it is empty at every call.
local voters = {}

-- votes reports whether the node votes, without reading its clock: it does
-- when this process already found the same marker and writer out of a
-- quarantine as long as delay or longer. Time only moves on (A1), so a
-- marker that was old enough stays old enough; any change to the marker or
-- its writer (a flush, a restart, a failover, a fresh quarantine) is a
-- different value, which quarantine judges again.
local function votes(markerKey, marker, writer, delay)
	local seen = voters[markerKey]
	return seen ~= nil and marker == seen[1] and writer == seen[2] and delay <= seen[3]
end

-- voted remembers that the node votes with marker and writer for delay
-- (see votes).
local function voted(markerKey, marker, writer, delay)
	voters[markerKey] = {marker, writer, delay}
end
