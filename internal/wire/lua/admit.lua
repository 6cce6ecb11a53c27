-- admit applies the restart quarantine to an acquisition on one node (see
-- quarantine.lua), with the keys and arguments of acquire (see acquire.lua),
-- and reads the key's fencing counter. It returns the reply that refuses the
-- acquisition, or nil and the counter (a decimal string, false when absent).
local function admit(KEYS, ARGV, k, a, shared)
	if redis.replicate_commands then
		redis.replicate_commands() -- Redis < 5: allow writes after TIME
	end
	local t = nodeClock(shared)
	local delay = tonumber(ARGV[a + 3])
	if delay > 0 then
		local marker, writer = restartMarker(shared, KEYS[k + 3], KEYS[k + 4])
		local left, restarted = recoveryLeft(shared, marker, writer, delay)
		if not marker or restarted then
			-- The node lost its data, never served a lock, or is another
			-- process than the one that wrote its marker (a restart that
			-- reloaded older data, or a failover): start its quarantine.
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
			redis.call("SET", KEYS[k + 4], processID(shared))
			shared.writer = processID(shared)
		end
	end

	local counter = redis.call("GET", KEYS[k + 2])
	if counter and not string.match(counter, "^%d+$") then
		return redis.error_reply("redlock: fencing counter " .. KEYS[k + 2] .. " is not an integer")
	end
	return nil, counter
end
