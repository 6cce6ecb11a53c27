-- nextWaiters returns the first two clients in a key's queue of waiting
-- clients (see queuedAcquire), each after a space, or "" when none waits.
-- It drops the stale entries it meets on the way, up to 64: a client that
-- stopped waiting without taking the key (a process that died with many
-- readers waiting leaves one for each). queue and deadlines are the
-- queue's keys; now is the caller's clock in microseconds. With upto (a
-- release that names them, see release.lua), the entries it returns last
-- no longer than upto, in microseconds on the caller's clock: a client
-- named that is alive tries for the key at once, which renews its entry
-- (see enterQueue); one that died while named stops holding the line
-- then, not a whole place's life after its last attempt.
local function nextWaiters(queue, deadlines, now, upto)
	local names, found, named = "", 0, {}
	for _ = 1, 32 do
		local ids = redis.call("ZRANGE", queue, found, found + 1)
		if #ids == 0 then
			break
		end
		local ends = redis.call("HMGET", deadlines, unpack(ids))
		for i, id in ipairs(ids) do
			if ends[i] and tonumber(ends[i]) > now then
				names = names .. " " .. id
				found = found + 1
				if upto and tonumber(ends[i]) > upto then
					named[#named + 1] = id
					named[#named + 1] = string.format("%.0f", upto)
				end
				if found == 2 then
					break
				end
			else
				redis.call("ZREM", queue, id)
				redis.call("HDEL", deadlines, id)
			end
		end
		if found == 2 then
			break
		end
	end
	if #named > 0 then
		redis.call("HSET", deadlines, unpack(named))
	end
	return names
end
