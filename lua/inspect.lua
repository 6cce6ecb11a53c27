-- inspect reads what one node holds for a lock, in one consistent snapshot,
-- and whether the node is recovering (see quarantine.lua). It reads its
-- request's keys and arguments at offsets k and a in KEYS and ARGV; shared is
-- the table that the requests of one script call share (see acquire.lua).
-- KEYS[k+1] lock key; KEYS[k+2] fencing counter ("redlock:fence:" + lock key); KEYS[k+3] restart
-- marker ("redlock:marker").
-- ARGV[a+1] recovery delay in microseconds, "0" when the quarantine is off.
-- Returns {holder, lock PTTL in ms, counter, marker, left}, where an absent
-- string is "" and left is the microseconds the node stays recovering: 0
-- when it is not, the whole delay when it has no marker, -1 when the marker
-- is not a number.
local function inspect(KEYS, ARGV, k, a, shared)
	local marker = restartMarker(shared, KEYS[k + 3])
	return {
		redis.call("GET", KEYS[k + 1]) or "",
		redis.call("PTTL", KEYS[k + 1]),
		redis.call("GET", KEYS[k + 2]) or "",
		marker or "",
		recoveryLeft(shared, marker, tonumber(ARGV[a + 1])) or -1,
	}
end
