-- inspect reads what one node holds for a lock, in one consistent snapshot.
-- It reads its request's keys at offset k in KEYS.
-- KEYS[k+1] lock key; KEYS[k+2] fencing counter (FenceKey); KEYS[k+3] restart
-- marker (MarkerKey).
-- Returns {holder, lock PTTL in ms, counter, marker, TIME seconds, TIME
-- microseconds}; an absent string is "".
local function inspect(KEYS, ARGV, k)
	local t = redis.call("TIME")
	return {
		redis.call("GET", KEYS[k + 1]) or "",
		redis.call("PTTL", KEYS[k + 1]),
		redis.call("GET", KEYS[k + 2]) or "",
		redis.call("GET", KEYS[k + 3]) or "",
		t[1],
		t[2],
	}
end
