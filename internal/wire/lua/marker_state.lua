-- markerState reads a node's restart marker for MarkReady's check, which
-- marks the nodes only when the deployment is brand new (see quarantine.go),
-- and changes nothing. It reads its request's keys and arguments at offsets
-- k and a in KEYS and ARGV; shared is the table that the requests of one
-- script call share (see acquire.lua).
-- KEYS[k+1] restart marker ("redlock:marker"); KEYS[k+2] its process key
-- ("redlock:process"); ARGV[a+1] recovery delay in microseconds.
-- Returns {marker, left, restarted, process}: the marker, "" when absent;
-- the microseconds the node stays recovering (see quarantine.lua), 0 when
-- it votes, -1 when the marker is not a number; restarted, 1 when the
-- node's process changed since the marker was written or it sits out a
-- quarantine that a restart started, else 0; and the run_id of the node's
-- process (see process.lua), which the mark-ready script checks again.
local function markerState(KEYS, ARGV, k, a, shared)
	local marker, writer = restartMarker(shared, KEYS[k + 1], KEYS[k + 2])
	local left, restarted, afterRestart = recoveryLeft(shared, marker, writer, tonumber(ARGV[a + 1]))
	return {marker or "", left or -1, (restarted or afterRestart) and 1 or 0, processID(shared)}
end
