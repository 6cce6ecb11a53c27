-- raise raises the lock key's fencing counter to at least a token, and
-- reports whether the lock key still holds the caller's token. It reads its
-- request's keys and arguments at offsets k and a in KEYS and ARGV.
-- KEYS[k+1] lock key; KEYS[k+2] fencing counter ("redlock:fence:" + lock key).
-- ARGV[a+1] token; ARGV[a+2] fencing token (decimal, no leading zeros);
-- ARGV[a+3] counter TTL in milliseconds.
-- Returns 1 when the lock key holds ARGV[a+1], as its value or among its
-- unexpired readers (see readers.lua), 0 otherwise. The counter is at least
-- ARGV[a+2] afterwards (and, when it was absent, at least where a lost
-- counter starts again: see restartFence), unless another holder's token
-- is the lock key's value: that node's counter is its holder's fencing
-- token, which Check, CheckFence and an election's Leader read there, and
-- a raise serves no later token where the caller holds nothing (only the
-- nodes that hold a lock carry its token to the next quorum). Raising is
-- otherwise always safe: later tokens only grow. shared is the table that the requests of
-- one script call share (see acquire.lua).
local function raise(KEYS, ARGV, k, a, shared)
	-- pcall: GET fails on the readers' sorted set.
	local holder = redis.pcall("GET", KEYS[k + 1])
	local holds = holder == ARGV[a + 1]
	if type(holder) == "table" and holder.err then
		local ends = tonumber(redis.call("ZSCORE", KEYS[k + 1], ARGV[a + 1]))
		holds = ends ~= nil and ends > nodeMillis(shared)
	elseif holder and not holds then
		return 0
	end
	local counter = redis.call("GET", KEYS[k + 2])
	if counter and (not string.match(counter, "^%d+$") or #counter > 19 or (#counter == 19 and counter >= "9223372036854775807")) then
		return redis.error_reply("redlock: fencing counter " .. KEYS[k + 2] .. " is no fencing counter (a whole number from 0 that INCR can raise, below 2^63 - 1)")
	end
	raiseFence(KEYS[k + 2], counter, ARGV[a + 2], ARGV[a + 3], shared)
	if holds then
		return 1
	end
	return 0
end
