-- inspect reads what one node holds for a lock, in one consistent snapshot,
-- and whether the node is recovering (see quarantine.lua). It reads its
-- request's keys and arguments at offsets k and a in KEYS and ARGV; shared is
-- the table that the requests of one script call share (see acquire.lua).
-- KEYS[k+1] lock key; KEYS[k+2] fencing counter ("redlock:fence:" + lock
-- key); KEYS[k+3] restart marker ("redlock:marker"); KEYS[k+4] its process
-- key ("redlock:process"); KEYS[k+5] the key's queue of waiting clients
-- (see QueueKeys); KEYS[k+6] its forced record (see Layout.ForcedKey);
-- KEYS[k+7] the queue's deadlines.
-- ARGV[a+1] recovery delay in microseconds, "0" when the quarantine is off;
-- ARGV[a+2] the caller's clock in microseconds.
-- Returns {holder, lock PTTL in ms, counter, marker, left, restarted,
-- readers, waiting, forced, other, delayed}, where waiting is the number of live
-- entries in the key's queue (their deadline not past: a client that
-- stopped waiting without leaving lapses at its deadline, though the queue
-- key lasts while others wait), forced the forced record, other the type of the data
-- the key holds when it is neither a lock nor a lock's readers (a hash, a
-- list...: another program's key), and where an absent string is "",
-- readers are the tokens of the
-- unexpired readers of a shared lock (see readers.lua), delayed those of
-- them whose own TTL ran out, kept only by their lock-delay (see
-- reader_delay.lua), holder is "" when they hold it, left is the microseconds the node stays
-- recovering (0 when it is not, the whole delay when it has no marker or
-- restarted, -1 when the marker is not a number), and restarted is 1 when
-- the node's process changed since its marker was written, or it sits out a
-- quarantine that a restart started, else 0.
-- liveEntries counts the entries of a key's queue (queue, deadlines) whose
-- deadline is not past now, the caller's clock in microseconds.
local function liveEntries(queue, deadlines, now)
	local live = 0
	for _, id in ipairs(redis.call("ZRANGE", queue, 0, -1)) do
		local ends = redis.call("HGET", deadlines, id)
		if ends and tonumber(ends) > now then
			live = live + 1
		end
	end
	return live
end

local function inspect(KEYS, ARGV, k, a, shared)
	local marker, writer = restartMarker(shared, KEYS[k + 3], KEYS[k + 4])
	local left, restarted, afterRestart = recoveryLeft(shared, marker, writer, tonumber(ARGV[a + 1]))
	-- pcall: GET fails on the readers' sorted set.
	local holder, readers, delayed, other = redis.pcall("GET", KEYS[k + 1]), {}, {}, ""
	if type(holder) == "table" and holder.err then
		holder = ""
		other = redis.call("TYPE", KEYS[k + 1]).ok
		-- A readers' set always has an expiry (see acquireShared).
		if other == "zset" and redis.call("PTTL", KEYS[k + 1]) ~= -1 then
			local now = nodeMillis(shared)
			local scored = redis.call("ZRANGEBYSCORE", KEYS[k + 1], "(" .. now, "+inf", "WITHSCORES")
			for i = 1, #scored, 2 do
				readers[#readers + 1] = scored[i]
				if readerDelayStands(scored[i], tonumber(scored[i + 1]), now) then
					delayed[#delayed + 1] = scored[i]
				end
			end
			other = ""
		end
	end
	return {
		holder or "",
		redis.call("PTTL", KEYS[k + 1]),
		redis.call("GET", KEYS[k + 2]) or "",
		marker or "",
		left or -1,
		(restarted or afterRestart) and 1 or 0,
		readers,
		liveEntries(KEYS[k + 5], KEYS[k + 7], tonumber(ARGV[a + 2])),
		redis.call("GET", KEYS[k + 6]) or "",
		other,
		delayed,
	}
end
