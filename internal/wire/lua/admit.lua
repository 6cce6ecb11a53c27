-- admit applies the restart quarantine to an acquisition on one node (see
-- quarantine.lua), with the keys and arguments of acquire (see acquire.lua),
-- and reads the key's fencing counter, the lock key and, when waitingKey is
-- given, the key's waiting mark (see markWaiting). It returns the reply that
-- settles the acquisition without taking the key (a refusal, or the grant
-- of a repeated run: see below), or nil, the counter (a decimal string,
-- false when absent), the mark (false when absent) and whether the key is
-- held (by a lock: a string).
-- The marker, its writer, the counter, the lock key and the mark are read
-- by one MGET: they lie in one slot (see Layout.MarkerKeys). MGET reads a
-- key of another type (a readers' sorted set) as absent.
-- A lock key that holds the caller's token already is this very attempt's
-- grant (each attempt has a token of its own): the request ran before, and
-- the client sent it again once its reply was lost (go-redis does after a
-- socket timeout). The run answers as the first did, with the counter that
-- run set, so that a refusal always means that the node holds nothing of
-- the attempt's, and the attempt's clean-up can leave it out.
local function admit(KEYS, ARGV, k, a, shared, waitingKey)
	local delay = tonumber(ARGV[a + 3])
	local counter, holder, waiting
	if delay > 0 then
		local read
		if waitingKey then
			read = redis.call("MGET", KEYS[k + 3], KEYS[k + 4], KEYS[k + 2], KEYS[k + 1], waitingKey)
		else
			read = redis.call("MGET", KEYS[k + 3], KEYS[k + 4], KEYS[k + 2], KEYS[k + 1])
		end
		if not votes(KEYS[k + 3], read[1], read[2], delay) then
			shared.marker, shared.markerKey, shared.writer = read[1], KEYS[k + 3], read[2]
			local refused = quarantine(KEYS, k, shared, delay)
			if refused then
				return refused
			end
		end
		counter, holder, waiting = read[3], read[4], read[5]
	elseif waitingKey then
		local read = redis.call("MGET", KEYS[k + 2], KEYS[k + 1], waitingKey)
		counter, holder, waiting = read[1], read[2], read[3]
	else
		local read = redis.call("MGET", KEYS[k + 2], KEYS[k + 1])
		counter, holder = read[1], read[2]
	end
	if counter and (not string.match(counter, "^%d+$") or #counter > 19 or (#counter == 19 and counter >= "9223372036854775807")) then
		return brokenCounter(KEYS[k + 2])
	end
	if holder == ARGV[a + 1] then
		return repeatedGrant(KEYS, ARGV, k, a, shared, counter)
	end
	return nil, counter, waiting or false, holder ~= false
end
