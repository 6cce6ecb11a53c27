-- forceRelease frees a lock without its holder's token, for an operator:
-- it deletes the lock key, whether a writer holds it or readers do (see
-- readers.lua), records who forced it and the tokens it took in a record
-- that expires when the lock would have, and announces the release as
-- release does, naming the first waiting clients, so that waiters try at
-- once. A key without expiry, or of another type, is no lock of a lock
-- client's: it is left alone, and the call fails. It reads its request's
-- keys and arguments at offsets k and a in KEYS and ARGV.
-- KEYS[k+1] lock key; KEYS[k+2] and KEYS[k+3] the key's queue and its
-- deadlines; KEYS[k+4] the forced record ("redlock:forced:" + tag + key).
-- ARGV[a+1] who forces it; ARGV[a+2] release channel prefix; ARGV[a+3] the
-- caller's clock in microseconds. sharded announces by SPUBLISH, on a
-- Redis Cluster node (see shardedRelease).
-- Returns the tokens taken: the writer's, or each reader's; none when the
-- key was absent.
local function forceRelease(KEYS, ARGV, k, a, shared, sharded)
	local key = KEYS[k + 1]
	local pttl = redis.call("PTTL", key)
	if pttl == -2 then
		return {}
	end
	local kind = redis.call("TYPE", key).ok
	if pttl < 0 or (kind ~= "string" and kind ~= "zset") then
		return redis.error_reply("ERR not a lock: " .. kind .. " without a lock's expiry")
	end
	if kind == "zset" then
		local notLock = notReaders(key)
		if notLock then
			return notLock
		end
	end
	local tokens
	if kind == "string" then
		tokens = {redis.call("GET", key)}
	else
		tokens = redis.call("ZRANGE", key, 0, -1)
	end
	redis.call("DEL", key)
	redis.call("SET", KEYS[k + 4], ARGV[a + 1] .. " " .. ARGV[a + 3] .. " " .. table.concat(tokens, " "), "PX", pttl)
	local channel = ARGV[a + 2] .. key
	local names = nextWaiters(KEYS[k + 2], KEYS[k + 3], tonumber(ARGV[a + 3]))
	local message = "forced." .. ARGV[a + 3] .. names
	local send = publish
	if sharded then
		send = function(ch, msg)
			local sent = redis.pcall("SPUBLISH", ch, msg)
			if type(sent) == "table" and sent.err then
				redis.pcall("PUBLISH", ch, msg)
			end
		end
	end
	sendAnnouncement(send, channel, message, names)
	return tokens
end
