-- leaveQueue takes client id out of a key's queue of waiting clients (see
-- queuedAcquire), queue and deadlines, if its entry is still the one made
-- by the acquisition that began waiting at since (its score, in
-- microseconds on the client's clock), and reports whether it did. A later
-- waiter of the same client has moved the entry to its own time: the entry
-- is that waiter's place, and stays.
local function leaveQueue(queue, deadlines, id, since)
	local score = redis.call("ZSCORE", queue, id)
	if not score or tonumber(score) ~= tonumber(since) then
		return false
	end
	redis.call("ZREM", queue, id)
	redis.call("HDEL", deadlines, id)
	return true
end
