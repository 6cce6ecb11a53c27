-- listScan takes one step of a SCAN over the node's keys and keeps those
-- that hold a lock of this library: a string that begins like one of its
-- tokens (see TokenTTLSeparator), or a sorted set, the readers of a shared
-- lock (see readers.lua), whose first member does. It reads only the keys
-- that this step of SCAN returned, a few bytes of each, so that a listing
-- of a large key space takes many short steps and never blocks the node.
-- Its request has no keys but, on a Redis Cluster, one of the master it
-- scans, which routes it there.
-- ARGV[a+1] cursor; ARGV[a+2] MATCH pattern; ARGV[a+3] COUNT.
-- Returns {next cursor, {key...}}.
local function listScan(KEYS, ARGV, k, a, shared)
	local step = redis.call("SCAN", ARGV[a + 1], "MATCH", ARGV[a + 2], "COUNT", ARGV[a + 3])
	local found = {}
	for _, key in ipairs(step[2]) do
		local kind = redis.call("TYPE", key).ok
		local value
		if kind == "string" then
			value = redis.call("GETRANGE", key, 0, 63)
		elseif kind == "zset" then
			value = redis.call("ZRANGE", key, 0, 0)[1]
		end
		if value and string.find(value, "^[%w_-]+%.%d") then
			found[#found + 1] = key
		end
	end
	return {step[1], found}
end
