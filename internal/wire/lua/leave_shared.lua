-- leaveShared takes the reader token out of the readers of key, and reports
-- whether it was one of them, unexpired. A reader kept only by its
-- lock-delay (see readerDelayStands) stays, and was not.
local function leaveShared(key, token, shared)
	local now = nodeMillis(shared)
	local ends = tonumber(redis.call("ZSCORE", key, token))
	if not ends or readerDelayStands(token, ends, now) then
		return false
	end
	redis.call("ZREM", key, token)
	expireWithReaders(key, now)
	return ends > now
end
