-- admit applies the restart quarantine to an acquisition on one node (see
-- quarantine.lua), with the keys and arguments of acquire (see acquire.lua),
-- and reads the key's fencing counter. It returns the reply that refuses the
-- acquisition, or nil and the counter (a decimal string, false when absent).
-- The marker, its writer and the counter are read by one MGET: the three
-- keys lie in one slot (see Layout.MarkerKeys).
local function admit(KEYS, ARGV, k, a, shared)
	local delay = tonumber(ARGV[a + 3])
	local counter
	if delay > 0 then
		local read = redis.call("MGET", KEYS[k + 3], KEYS[k + 4], KEYS[k + 2])
		counter = read[3]
		if not votes(KEYS[k + 3], read[1], read[2], delay) then
			shared.marker, shared.markerKey, shared.writer = read[1], KEYS[k + 3], read[2]
			local refused = quarantine(KEYS, k, shared, delay)
			if refused then
				return refused
			end
		end
	else
		counter = redis.call("GET", KEYS[k + 2])
	end
	if counter and not string.match(counter, "^%d+$") then
		return brokenCounter(KEYS[k + 2])
	end
	return nil, counter
end
