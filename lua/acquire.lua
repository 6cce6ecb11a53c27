-- acquire takes a lock on one node: checks the restart quarantine, sets the
-- lock key if it is free, and bumps the key's fencing counter, all atomically.
-- It reads its request's keys and arguments at offsets k and a in KEYS and
-- ARGV; shared is the table that the requests of one script call share, so
-- that the node's clock and restart marker are read once per script call.
-- KEYS[k+1] lock key; KEYS[k+2] fencing counter ("redlock:fence:" + lock
-- key); KEYS[k+3] restart marker ("redlock:marker"); KEYS[k+4] the marker's
-- process key ("redlock:process").
-- ARGV[a+1] token; ARGV[a+2] lock TTL in milliseconds; ARGV[a+3] recovery
-- delay in microseconds, "0" when the quarantine is off; ARGV[a+4] counter
-- TTL in milliseconds; ARGV[a+5] the caller's clock in microseconds
-- (decimal).
-- Returns {1, fence, 0} when granted, {0, "0", 0} when the key is held, and
-- {2, "0", microseconds left} while the node is recovering; fence is the
-- new counter, a decimal string (see fence.lua).
local function acquire(KEYS, ARGV, k, a, shared)
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
	if not redis.call("SET", KEYS[k + 1], ARGV[a + 1], "NX", "PX", ARGV[a + 2]) then
		return {0, "0", 0}
	end
	return {1, nextFence(KEYS[k + 2], counter, ARGV[a + 5], ARGV[a + 4], t), 0}
end
