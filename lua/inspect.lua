-- Reads what one node holds for a lock, in one consistent snapshot.
-- KEYS[1] lock key; KEYS[2] fencing counter (FenceKey); KEYS[3] restart marker
-- (MarkerKey).
-- Returns {holder, lock PTTL in ms, counter, marker, TIME seconds, TIME
-- microseconds}; an absent string is "".
local t = redis.call("TIME")
return {
	redis.call("GET", KEYS[1]) or "",
	redis.call("PTTL", KEYS[1]),
	redis.call("GET", KEYS[2]) or "",
	redis.call("GET", KEYS[3]) or "",
	t[1],
	t[2],
}
