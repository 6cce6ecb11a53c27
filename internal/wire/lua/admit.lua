-- admit applies the restart quarantine to an acquisition on one node (see
-- quarantine.lua), with the keys and arguments of acquire (see acquire.lua),
-- and reads the key's fencing counter and, when waitingKey is given, the
-- key's waiting mark (see markWaiting). It returns the reply that refuses
-- the acquisition, or nil, the counter (a decimal string, false when
-- absent) and the mark (false when absent).
-- The marker, its writer, the counter and the mark are read by one MGET:
-- they lie in one slot (see Layout.MarkerKeys).
local function admit(KEYS, ARGV, k, a, shared, waitingKey)
	local delay = tonumber(ARGV[a + 3])
	local counter, waiting
	if delay > 0 then
		local read
		if waitingKey then
			read = redis.call("MGET", KEYS[k + 3], KEYS[k + 4], KEYS[k + 2], waitingKey)
		else
			read = redis.call("MGET", KEYS[k + 3], KEYS[k + 4], KEYS[k + 2])
		end
		if not votes(KEYS[k + 3], read[1], read[2], delay) then
			shared.marker, shared.markerKey, shared.writer = read[1], KEYS[k + 3], read[2]
			local refused = quarantine(KEYS, k, shared, delay)
			if refused then
				return refused
			end
		end
		counter, waiting = read[3], read[4]
	elseif waitingKey then
		local read = redis.call("MGET", KEYS[k + 2], waitingKey)
		counter, waiting = read[1], read[2]
	else
		counter = redis.call("GET", KEYS[k + 2])
	end
	if counter and not string.match(counter, "^%d+$") then
		return brokenCounter(KEYS[k + 2])
	end
	return nil, counter, waiting or false
end
