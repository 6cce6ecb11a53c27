-- waitAsReader marks the key waited for, and queues a reader that waits
-- in Acquire (see acquireShared).
local function waitAsReader(KEYS, ARGV, k, a)
	local ms = tonumber(ARGV[a + 6])
	if ARGV[a + 7] == "" then
		markWaiting(KEYS[k + 7], ms)
	else
		enterQueue(KEYS[k + 5], KEYS[k + 6], KEYS[k + 7], ARGV[a + 7], ARGV[a + 8], ARGV[a + 5], ms * 1000)
	end
end

-- acquireShared takes a shared (read) lock on one node: checks the restart
-- quarantine, and adds the caller's token to the key's readers (see
-- readers.lua) unless a writer holds the key or waits for it since before
-- the caller, then bumps the key's fencing counter, which writers bump too.
-- A writer waits for the key when its refused Acquire queued it (see
-- queuedAcquire): refusing the readers that came after it lets the readers
-- that hold the key drain, so that a stream of readers cannot starve a
-- writer; a reader that waits in Acquire queues too (see
-- reader_entries.lua), and the writers that came after it defer to it, so
-- that a stream of writers cannot starve a reader.
-- KEYS[k+1..k+4] and ARGV[a+1..a+5] as for acquire; KEYS[k+5] and
-- KEYS[k+6] the key's queue of waiting clients and its deadlines, and
-- KEYS[k+7] its waiting mark (see queuedAcquire), which a refused reader
-- sets for ARGV[a+6] milliseconds, as it waits for the key's release.
-- ARGV[a+7] the caller's reader entry (its client id and "+r") and
-- ARGV[a+8] when it began waiting, in microseconds on its clock, for a
-- reader waiting in Acquire: refused, it enters the queue for as long as
-- the mark lasts, or keeps its place there; granted, it leaves it, and its
-- release or its giving up takes it out on the nodes that refused it. Both "" for a reader that does not wait
-- (TryAcquire), which yields to every writer queued.
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
	if not notLock and kind == "zset" then
		notLock = notReaders(key)
	end
	if notLock then
		return notLock
	end
	if kind ~= "none" and kind ~= "zset" then
		waitAsReader(KEYS, ARGV, k, a)
		return {0, "0", 0} -- a writer holds it
	end
	if waiting and writerBefore(KEYS[k + 5], KEYS[k + 6], ARGV[a + 8], tonumber(ARGV[a + 5])) then
		waitAsReader(KEYS, ARGV, k, a)
		return {3, "0", 0} -- a writer waits for it
	end
	if waiting and ARGV[a + 7] ~= "" then
		-- Granted, it is no longer in line here: a writer refused while
		-- the readers hold would count it ahead of itself.
		redis.call("ZREM", KEYS[k + 5], ARGV[a + 7])
		redis.call("HDEL", KEYS[k + 6], ARGV[a + 7])
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
