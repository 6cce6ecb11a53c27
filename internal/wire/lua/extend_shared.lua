-- extendShared sets the expiry of the reader token of key to ttl
-- milliseconds from now, while it is an unexpired reader, and reports
-- whether it was; a reader kept only by its lock-delay (see
-- readerDelayStands) is not.
local function extendShared(key, token, ttl, shared)
	local now = nodeMillis(shared)
	local ends = tonumber(redis.call("ZSCORE", key, token))
	if not ends or ends <= now or readerDelayStands(token, ends, now) then
		return false
	end
	redis.call("ZADD", key, "XX", now + tonumber(ttl), token)
	expireWithReaders(key, now)
	return true
end
