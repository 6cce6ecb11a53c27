-- extend sets a new expiry on the lock key only while it still holds the
-- caller's token, or on the caller's token among the key's readers (see
-- readers.lua), and keeps the key's fencing counter for at least as long
-- as an acquisition with that TTL would: the counter of a lock renewed for
-- longer than it first lasted stays, for Check, CheckFence and an
-- election's Leader to read as its holder's token. It reads its request's
-- keys and arguments at offsets k and a in KEYS and ARGV; shared is the
-- table that the requests of one script call share (see acquire.lua).
-- KEYS[k+1] lock key; KEYS[k+2] fencing counter ("redlock:fence:" + lock
-- key); ARGV[a+1] token; ARGV[a+2] new TTL in milliseconds; ARGV[a+3] the
-- counter's TTL in milliseconds (see nextFence).
-- Returns 1 when extended, 0 otherwise.
local function extend(KEYS, ARGV, k, a, shared)
	-- pcall: GET fails on the readers' sorted set.
	local holder = redis.pcall("GET", KEYS[k + 1])
	local extended = 0
	if holder == ARGV[a + 1] and delayStands(KEYS[k + 1], holder) then
		return 0 -- its TTL ran out here: the lock ended, its lock-delay stands
	elseif holder == ARGV[a + 1] then
		extended = redis.call("PEXPIRE", KEYS[k + 1], ARGV[a + 2])
	elseif type(holder) == "table" and holder.err and extendShared(KEYS[k + 1], ARGV[a + 1], ARGV[a + 2], shared) then
		extended = 1
	end
	-- Never shortened: another holder's acquisition, or a reader's, may
	-- have set it for longer.
	if extended == 1 and redis.call("PTTL", KEYS[k + 2]) < tonumber(ARGV[a + 3]) then
		redis.call("PEXPIRE", KEYS[k + 2], ARGV[a + 3])
	end
	return extended
end
