-- acquireShared takes a shared (read) lock on one node: checks the restart
-- quarantine, and adds the caller's token to the key's readers (see
-- readers.lua) unless a writer holds the key or waits for it, then bumps the
-- key's fencing counter, which writers bump too. A writer waits for the key
-- when its refused Acquire queued it (see queuedAcquire): refusing readers
-- then lets the readers that hold the key drain, so that a stream of readers
-- cannot starve a writer.
-- KEYS[k+1..k+4] and ARGV[a+1..a+5] as for acquire; KEYS[k+5] and
-- KEYS[k+6] the key's queue of waiting clients and its deadlines, and
-- KEYS[k+7] its waiting mark (see queuedAcquire), which a refused reader
-- sets for ARGV[a+6] milliseconds, as it waits for the key's release.
-- Returns as acquire does, and {3, "0", 0} when no writer holds the key but
-- one waits for it.
local function acquireShared(KEYS, ARGV, k, a, shared)
	local refused, counter, waiting = admit(KEYS, ARGV, k, a, shared, KEYS[k + 7])
	if refused then
		return refused
	end
	local key = KEYS[k + 1]
	local kind = redis.call("TYPE", key).ok
	-- A readers' set always has an expiry: a sorted set without one is
	-- another program's, which a reader must not touch.
	local notLock = kind ~= "none" and kind ~= "string" and notALock(key)
	if notLock then
		return notLock
	end
	if kind ~= "none" and kind ~= "zset" then
		markWaiting(KEYS[k + 7], tonumber(ARGV[a + 6]))
		return {0, "0", 0} -- a writer holds it
	end
	if waiting and nextWaiters(KEYS[k + 5], KEYS[k + 6], tonumber(ARGV[a + 5])) ~= "" then
		markWaiting(KEYS[k + 7], tonumber(ARGV[a + 6]))
		return {3, "0", 0} -- a writer waits for it
	end
	local now = nodeMillis(shared)
	redis.call("ZADD", key, now + tonumber(ARGV[a + 2]), ARGV[a + 1])
	expireWithReaders(key, now)
	local fence = nextFence(KEYS[k + 2], counter, ARGV[a + 5], ARGV[a + 4], shared)
	if not fence then
		leaveShared(key, ARGV[a + 1], shared)
		return brokenCounter(KEYS[k + 2])
	end
	return {1, fence, 0}
end
