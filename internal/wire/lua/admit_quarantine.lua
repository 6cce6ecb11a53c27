-- quarantine is admit's check of the restart quarantine (see quarantine.lua)
-- once the marker and its writer are in shared (see marker.lua), with the
-- keys of acquire (see acquire.lua) and the recovery delay in
-- microseconds. It returns the reply that refuses the acquisition, or nil
-- when the node votes, which votes then remembers.
local function quarantine(KEYS, k, shared, delay)
	local marker, writer = restartMarker(shared, KEYS[k + 3], KEYS[k + 4])
	local left, restarted = recoveryLeft(shared, marker, writer, delay)
	if not marker or restarted then
		-- The node lost its data, never served a lock, or is another
		-- process than the one that wrote its marker (a restart that
		-- reloaded older data, or a failover): start its quarantine.
		local t = nodeClock(shared)
		setMarker(shared, KEYS[k + 3], KEYS[k + 4], t[1] .. string.format("%06d", tonumber(t[2])), restarted)
		return {2, "0", delay}
	end
	if not left then
		return redis.error_reply("redlock: " .. KEYS[k + 3] .. " is not a time in microseconds")
	end
	if left > 0 then
		return {2, "0", left}
	end
	if not writer then
		-- A marker from before writers were recorded: this process
		-- adopts it, so that its next restart is noticed.
		writer = processID(shared)
		redis.call("SET", KEYS[k + 4], writer)
		shared.writer = writer
	end
	voted(KEYS[k + 3], marker, writer, delay)
	return nil
end
