-- below reports whether decimal string a is smaller than decimal string b,
-- neither with leading zeros: compared as strings, exact at any size, where
-- Lua numbers are not beyond 2^53. A shorter one is smaller.
local function below(a, b)
	return #a < #b or (#a == #b and a < b)
end

-- restartFence returns, as a decimal string, the least value that a lost or
-- expired fencing counter starts again from on this node: its clock less a
-- second, in microseconds. A counter lives at least a second (TTL plus
-- Options.RecoveryDelay) past the last token it gave, so that, by the
-- node's clock, that token is older than this; and so is every token the
-- node gave before a forward jump of its clock that expired the counter.
-- shared gives the node's clock (see clock.lua).
local function restartFence(shared)
	local t = nodeClock(shared)
	return string.format("%d%06d", tonumber(t[1]) - 1, tonumber(t[2]))
end

-- nextFence sets the fencing counter fenceKey ("redlock:fence:" + lock key), which held counter
-- (a decimal string, false when absent), to the fencing token of a new
-- acquisition, with a TTL of ttl milliseconds, and returns the token as a
-- decimal string, or nil when fenceKey holds another type than a string
-- (see brokenCounter). hint is the caller's clock in microseconds (decimal);
-- shared, the table that the requests of one script call share, gives the
-- node's clock (see clock.lua).
-- The new counter is the largest of: the old one plus one; the caller's clock
-- (hint, the same on every node, so that nodes that missed acquisitions agree
-- again); and, when the counter is absent, this node's clock less a second
-- (restartFence, which wins only when the caller's clock is more than a
-- second behind: when the caller is that late, or the node's clock jumped
-- forward). A lost or expired counter thus restarts above the tokens handed
-- out before, which followed the clocks too, even those of callers whose
-- clock was read later than this caller's; a counter that is there is above
-- them already, and is not compared with the node's clock.
local function nextFence(fenceKey, counter, hint, ttl, shared)
	local current = tonumber(counter or "0")
	local fence
	if counter and tonumber(hint) > current then
		fence = hint
	elseif counter then
		redis.call("INCR", fenceKey)
		redis.call("PEXPIRE", fenceKey, ttl)
		-- Read back as a string: exact even beyond 2^53, where Lua numbers are not.
		return redis.call("GET", fenceKey)
	else
		fence = restartFence(shared)
		if not below(hint, fence) then
			fence = hint
		end
	end
	if counter then
		redis.call("SET", fenceKey, fence, "PX", ttl)
	elseif not redis.call("SET", fenceKey, fence, "NX", "PX", ttl) then
		-- MGET reads a key of another type as absent: it is not a
		-- counter, and stays as it is.
		return nil
	end
	return fence
end

-- brokenCounter is the error of an acquisition whose fencing counter
-- fenceKey is no whole number from 0 that INCR can raise, below 2^63 - 1
-- (a counter starts from a clock in microseconds, 16 digits): the node's
-- own WRONGTYPE error where it is not a string (a GET raises it), else a
-- reply that says so.
local function brokenCounter(fenceKey)
	redis.call("GET", fenceKey)
	return redis.error_reply("redlock: fencing counter " .. fenceKey .. " is no fencing counter (a whole number from 0 that INCR can raise, below 2^63 - 1)")
end

-- raiseFence raises the fencing counter fenceKey, which held counter (a
-- decimal string, false when absent), to at least token (decimal, no
-- leading zeros), with a TTL of ttl milliseconds when it sets it. A
-- counter lost or expired since token was handed out (this node's clock
-- jumped, say) may have given later tokens since: it starts again where an
-- acquisition's would (see nextFence), above all of them. It returns false
-- when fenceKey holds another type than a string (MGET reads it as
-- absent), and true otherwise.
local function raiseFence(fenceKey, counter, token, ttl, shared)
	if not counter then
		local restart = restartFence(shared)
		if below(token, restart) then
			token = restart
		end
		return redis.call("SET", fenceKey, token, "NX", "PX", ttl) ~= false
	end
	if below(counter, token) then
		redis.call("SET", fenceKey, token, "PX", ttl)
	end
	return true
end
