-- enterQueue puts client id in a key's queue of waiting clients (see
-- queuedAcquire), or keeps it there, at since (when it began waiting, in
-- microseconds on its clock), with a deadline lasts microseconds past
-- clock (the caller's clock now, in microseconds); the queue expires that
-- long after, and the key's waiting mark (see markWaiting) a second more.
-- Returns the client's place in the queue (0 for the first in line).
local function enterQueue(queue, deadlines, waiting, id, since, clock, lasts)
	lasts = tonumber(lasts)
	redis.call("ZADD", queue, since, id)
	redis.call("HSET", deadlines, id, string.format("%.0f", tonumber(clock) + lasts))
	local ms = math.ceil(lasts / 1000)
	redis.call("PEXPIRE", queue, ms)
	redis.call("PEXPIRE", deadlines, ms)
	markWaiting(waiting, ms)
	return redis.call("ZRANK", queue, id)
end
