-- readerDelayStands reports the same as delayStands of a reader's token,
-- which expires at ends, in milliseconds on the node's clock (see
-- readers.lua), now: only its lock-delay keeps it among the readers.
local function readerDelayStands(token, ends, now)
	local delay = tokenDelay(token)
	return delay ~= nil and ends - now <= delay
end
