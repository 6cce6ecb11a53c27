-- markReady marks a node ready to vote at once: sets the restart marker to
-- "0" when it is missing or the node is still recovering. It reads its
-- request's keys and arguments at offsets k and a in KEYS and ARGV.
-- KEYS[k+1] restart marker (MarkerKey); ARGV[a+1] recovery delay in
-- microseconds.
-- Returns 1 when the marker was set, 0 when the node was already ready.
local function markReady(KEYS, ARGV, k, a)
	if redis.replicate_commands then
		redis.replicate_commands() -- Redis < 5: allow writes after TIME
	end
	local marker = redis.call("GET", KEYS[k + 1])
	if marker then
		local since = tonumber(marker)
		if since then
			local t = redis.call("TIME")
			local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
			if now - since >= tonumber(ARGV[a + 1]) then
				return 0
			end
		end
	end
	redis.call("SET", KEYS[k + 1], "0")
	return 1
end
