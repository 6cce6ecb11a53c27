-- nextWaiters returns the first two clients in a key's queue of waiting
-- clients (see queuedAcquire), each after a space, or "" when none waits.
-- It drops the stale entries it meets on the way, up to 64: a client that
-- stopped waiting without taking the key (a process that died with many
-- readers waiting leaves one for each). queue and deadlines are the
-- queue's keys; now is the caller's clock in microseconds.
local function nextWaiters(queue, deadlines, now)
	local names, found = "", 0
	for _ = 1, 32 do
		local ids = redis.call("ZRANGE", queue, found, found + 1)
		if #ids == 0 then
			return names
		end
		local ends = redis.call("HMGET", deadlines, unpack(ids))
		for i, id in ipairs(ids) do
			if ends[i] and tonumber(ends[i]) > now then
				names = names .. " " .. id
				found = found + 1
				if found == 2 then
					return names
				end
			else
				redis.call("ZREM", queue, id)
				redis.call("HDEL", deadlines, id)
			end
		end
	end
	return names
end
