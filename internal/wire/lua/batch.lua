-- batch runs the requests of several calls to one node in one script call.
-- scripts are the functions it can run, by number, each as acquire.lua
-- describes: called with the batch's KEYS and ARGV, the offsets of its
-- request's keys and arguments in them, and one table that all the requests
-- share.
-- KEYS: each request's keys in turn. ARGV: for each request, its function's
-- number in scripts, its number of keys, its number of arguments, then its
-- arguments.
-- Returns one reply per request, in order; a request that fails has its
-- error as its reply and does not stop the others.
local function batch(KEYS, ARGV, scripts)
	local shared = {}
	local replies = {}
	local k, a = 0, 1
	local n = #ARGV
	while a <= n do
		local run = scripts[tonumber(ARGV[a])]
		local nkeys, nargs = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
		local ok, reply = pcall(run, KEYS, ARGV, k, a + 2, shared)
		if not ok then
			if type(reply) ~= "table" or not reply.err then
				reply = redis.error_reply(tostring(reply))
			end
		elseif reply == nil then
			reply = false
		end
		replies[#replies + 1] = reply
		k, a = k + nkeys, a + 3 + nargs
	end
	return replies
end
