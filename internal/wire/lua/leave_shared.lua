-- leaveShared takes the reader token out of the readers of key, and reports
-- whether it was one of them, unexpired.
local function leaveShared(key, token, shared)
	local now = nodeMillis(shared)
	local ends = tonumber(redis.call("ZSCORE", key, token))
	if not ends then
		return false
	end
	redis.call("ZREM", key, token)
	expireWithReaders(key, now)
	return ends > now
end
