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

-- endWithLock makes client id's entry in a key's queue, when it has one,
-- last no longer than the lock that its attempt was just granted: ttl
-- milliseconds past clock (the caller's clock, in microseconds). A holder
-- that dies without releasing then stops holding the line once its lock
-- has expired, instead of up to the entry's whole life (QueueLasts) after
-- its last attempt, which other waiters for a set of keys, or an election's
-- candidates, defer to (see setAcquire). The entry keeps its score: the
-- holder's next attempt, after one that failed on the other nodes, renews
-- it in its place.
local function endWithLock(deadlines, id, clock, ttl, lasts)
	local cap = tonumber(clock) + tonumber(ttl) * 1000
	if tonumber(ttl) * 1000 >= tonumber(lasts) then
		return -- the entry lapses before the lock does
	end
	local ends = redis.call("HGET", deadlines, id)
	if ends and tonumber(ends) > cap then
		redis.call("HSET", deadlines, id, string.format("%.0f", cap))
	end
end
