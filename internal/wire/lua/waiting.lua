-- markWaiting sets a key's waiting mark ("redlock:waiting:" + key), a
-- string that says that a client may wait for the key on this node, for ms
-- milliseconds and one second more: a refused acquisition that queues (see
-- queuedAcquire) or a refused reader (see acquireShared) sets it, and so
-- does an election's observer while it listens (see listen). A release
-- (see release) and a newcomer (see queuedAcquire) that find no mark read
-- no queue and announce nothing, as nobody waits to hear it; the mark
-- outlives the queue it stands for by a second, so that a queue is never
-- there without it.
local function markWaiting(waitingKey, ms)
	redis.call("SET", waitingKey, "1", "PX", ms + 1000)
end
