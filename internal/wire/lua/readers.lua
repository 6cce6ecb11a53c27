-- The readers of a shared lock (see acquire_shared.lua) are a sorted set at
-- the lock key itself: each reader's token, scored by when it expires, in
-- milliseconds on the node's clock. A writer's SET NX then fails while any
-- reader holds the key, and the key expires with its last reader.
--
-- expireWithReaders drops the readers of key that expired by now and makes
-- the key expire with the last of the others.
local function expireWithReaders(key, now)
	redis.call("ZREMRANGEBYSCORE", key, "-inf", now)
	local last = redis.call("ZRANGE", key, -1, -1, "WITHSCORES")
	if #last == 2 then
		redis.call("PEXPIREAT", key, last[2])
	end
end
