-- release deletes the lock key only while it still holds the caller's token,
-- or takes the token out of the key's readers (see readers.lua), and
-- announces the release unless ARGV[a+2] is empty or other readers still
-- hold the key: by PUBLISH, or by announce(channel, message) when given
-- (see shardedRelease). An announced release also takes the caller's
-- client out of the key's queue of waiting clients, whether or not the key
-- held its token on this node (a winning attempt refused by this node left
-- the client queued here: see queuedAcquire), but only while the entry is
-- still the one the released lock's acquisition made: its score is
-- ARGV[a+5], when that acquisition began waiting. Another goroutine of the
-- client that waits for the key since then has moved the entry to its own
-- time, and keeps it; a lock that never queued (TryAcquire, a reader's too)
-- sends "" and leaves the queue alone. So a waiter leaves the queue by its
-- own release, or when it stops renewing its entry (see nextWaiters), never
-- by someone else's release. Its message is the token, then the first
-- waiting clients (see nextWaiters), each after a space, so that only they
-- try for the key at once; it goes to each of those clients' own channel
-- for the key (the key's channel, ARGV[a+2] followed by the key, then a
-- space and the client's id), so that the other waiting clients are not
-- woken for nothing, or to the key's channel when nobody is queued. It
-- reads its request's keys and arguments at offsets k and a in KEYS and
-- ARGV.
-- KEYS[k+1] lock key; ARGV[a+1] token; ARGV[a+2] release channel prefix or
-- "". When announcing: KEYS[k+2] and KEYS[k+3] the key's queue and its
-- deadlines, KEYS[k+4] its waiting mark (see markWaiting), without which
-- nobody waits and nothing is read or announced; ARGV[a+3] the caller's clock in microseconds; ARGV[a+4] the
-- caller's entry in the queue (its client id, or its readers' entry: see
-- reader_entries.lua); ARGV[a+5] when the released lock's acquisition began
-- waiting, in microseconds on the caller's clock, or "";
-- ARGV[a+6] "1" when the release carries the attempt of the caller's next
-- goroutine (a handoff, see handoffAcquire), "" otherwise: it then
-- announces only to the clients it names, who may be ahead of that
-- attempt in the queue, and not on the key's channel, as the key is most
-- likely taken again at once. ARGV[a+7] how long, in microseconds, the
-- places of the clients it names last unless they try for the key (see
-- nextWaiters), or absent.
-- A release that names nobody is not announced where nobody listens on the
-- key's channel (see listened): no client waits for it unqueued. Nor is
-- one where the key has no waiting mark: every client that waits for the
-- key sets it (a refused acquisition, a refused reader, an observer).
-- A key kept only by its lock-delay (see delayStands) is not deleted.
-- Returns 1 when deleted, 0 otherwise.
local function release(KEYS, ARGV, k, a, shared, announce)
	local key = KEYS[k + 1]
	local announced = ARGV[a + 2] ~= ""
	local holder, waiting = false, false
	if announced then
		-- Nobody waits (the common case): one MGET reads the holder and
		-- the waiting mark, and no queue is read.
		local read = redis.call("MGET", key, KEYS[k + 4])
		holder, waiting = read[1], read[2]
	end
	if not holder then
		-- pcall: GET fails on the readers' sorted set, which MGET reads
		-- as absent.
		holder = redis.pcall("GET", key)
	end
	local left = false
	-- With the mark, the queue is read: the mark outlives the queue by a
	-- second, and a queue gone by then reads as empty.
	if waiting and ARGV[a + 5] ~= "" then
		left = leaveQueue(KEYS[k + 2], KEYS[k + 3], ARGV[a + 4], ARGV[a + 5])
	end
	local released = 1
	if holder == ARGV[a + 1] and delayStands(key, holder) then
		return 0 -- its TTL ran out here: the lock-delay stands
	elseif holder == ARGV[a + 1] then
		redis.call("DEL", key)
	elseif type(holder) == "table" and holder.err then
		if not leaveShared(key, ARGV[a + 1], shared) then
			return 0
		end
		if redis.call("EXISTS", key) == 1 then
			return 1 -- other readers hold it: nobody can take it yet
		end
	elseif left and not holder then
		-- A waiter that leaves the queue of a free key without taking it
		-- (it gave up, or took another permit or its set elsewhere) may
		-- have been first in line, for whom the node kept the key: it
		-- passes its turn on to the next clients in line.
		released = 0
	else
		return 0
	end
	if waiting then
		local channel = ARGV[a + 2] .. key
		local clock, upto = tonumber(ARGV[a + 3]), nil
		if ARGV[a + 7] then
			upto = clock + tonumber(ARGV[a + 7])
		end
		local names = nextWaiters(KEYS[k + 2], KEYS[k + 3], clock, upto)
		local message = ARGV[a + 1] .. names
		-- On the key's channel only when it names nobody: whether anybody
		-- listens there is asked only then.
		if names ~= "" or released == 1 and ARGV[a + 6] ~= "1" and (announce or listened(channel)) then
			sendAnnouncement(announce or publish, channel, message, names)
		end
	end
	return released
end
