-- queuedAcquire is acquire (see acquire.lua) for a caller that waits for the
-- key until it gets it (Acquire, not TryAcquire), over the key's queue of
-- waiting clients, which the key's release reads to name the clients to
-- wake (see nextWaiters). Refused, the caller enters the queue or keeps its
-- place there; granted, it keeps it too, until its release takes it out on
-- every node (see release), but lasting no longer than the lock (see
-- endWithLock): a node that left it out on granting an attempt
-- that failed on the others would name other clients at the next release
-- than the nodes that still queue it, and more clients would split the
-- votes. A client has one entry per key, its id, which its goroutines
-- take in turns: the one waiting now sets the entry's score to when it
-- began waiting, so that the release of a lock an earlier one won, whose
-- entry it was, leaves the entry in place (see release). A newcomer, on
-- its first attempt, does not take a free key while other live clients
-- queue for it: it is refused as if the key were held, and queues behind
-- them, instead of racing the clients the release woke. Only the first
-- attempt defers, so that nodes whose queues differ (an entry lost with a
-- request) cannot keep a key from everyone; but every attempt defers to a
-- reader first in line that began waiting before the caller (see
-- reader_entries.lua), so that writers cannot starve readers. A reader and
-- a writer never defer to each other: each defers only to the other that
-- began waiting first.
-- KEYS[k+1..k+4] and ARGV[a+1..a+5] as for acquire; KEYS[k+5] the key's
-- queue (a sorted set of client ids by the time they began waiting);
-- KEYS[k+6] the queue's deadlines (a hash of client id to the caller's
-- clock in microseconds past which the entry is stale); KEYS[k+7] the key's
-- waiting mark (see markWaiting), which every refusal sets, so that a
-- release and a newcomer that find it absent know at once that nobody
-- waits, without reading the queue.
-- ARGV[a+6] the caller's client id; ARGV[a+7] when it began waiting, in
-- microseconds on its clock; ARGV[a+8] how long an entry lasts without
-- being renewed, in microseconds; ARGV[a+9] "1" on the caller's first
-- attempt, "0" after, "2" on every attempt of a waiter for a set of keys
-- (AcquireAll), which defers on every attempt, not only the first, and
-- only to the clients queued before it: a free key goes to the first live
-- client in line, so that the keys of a set are kept free for the oldest
-- set waiter until it takes them all (see multikey.go); "3" on the attempt
-- that a release of the caller's own client carries, right behind it in
-- the same script call (a handoff, see handoffAcquire); "4" on an attempt
-- that a waiter second in line makes at its retry delay, no release having
-- woken it: finding the key free, it defers to the first live client in
-- line, other than itself, as a newcomer does, so that it cannot take the
-- key in the instant between a release and the attempt of the first in
-- line, which the release woke. Every such refusal queues it again, so the
-- nodes' queues agree after a round of attempts, and the first in line
-- everywhere is second nowhere: it takes the key. "5" on the attempt of a
-- waiter for a set of keys (or for a permit) that a release named second,
-- made a node timeout after that release named the client ARGV[a+10]
-- first (only a request with mode "5" has this tenth argument): it defers
-- as with "2", but not to that client, which let its turn pass (most
-- likely it died while first in line), so that a crashed waiter keeps
-- free keys from the others for a node timeout, not for the rest of its
-- place's life.
-- Returns as acquire does, except that a refusal's third element is the
-- caller's place in the queue (0 for the first in line): {0, "0", place}.
-- enqueue puts or keeps the caller in the key's queue (see queuedAcquire)
-- and returns its place there.
local function enqueue(KEYS, ARGV, k, a)
	return enterQueue(KEYS[k + 5], KEYS[k + 6], KEYS[k + 7], ARGV[a + 6], ARGV[a + 7], ARGV[a + 5], ARGV[a + 8])
end

-- setAcquire is queuedAcquire for a waiter for a set of keys (and an
-- election's candidate): it queues the caller first, applies the restart
-- quarantine (see admit), then grants a free key only when the caller is
-- the first live client in line, or the second behind passed, a client
-- that let its turn pass (mode "5"). The quarantine comes before the
-- deferral, so that a recovering node says so, and its recovery delay
-- starts at the first attempt of a waiter that is not first in line.
-- Granted, the caller stays queued until its release, or its next
-- attempt, takes it out or renews it.
local function setAcquire(KEYS, ARGV, k, a, shared, passed)
	local queue, deadlines, id = KEYS[k + 5], KEYS[k + 6], ARGV[a + 6]
	local place = enqueue(KEYS, ARGV, k, a)
	local reply, counter, _, held = admit(KEYS, ARGV, k, a, shared)
	if not reply and not held then
		local names = nextWaiters(queue, deadlines, tonumber(ARGV[a + 5]))
		local first, second = string.match(names, "^ (%S+) ?(%S*)")
		if passed and first == passed then
			first = second
		end
		if first ~= nil and first ~= "" and first ~= id then
			return {0, "0", redis.call("ZRANK", queue, id) or place}
		end
	end
	reply = reply or grant(KEYS, ARGV, k, a, shared, counter, held)
	if reply[1] == 0 then
		reply = {0, reply[2], redis.call("ZRANK", queue, id) or place}
	elseif reply[1] == 1 then
		endWithLock(deadlines, id, ARGV[a + 5], ARGV[a + 2], ARGV[a + 8])
	end
	return reply
end

-- handoffAcquire is queuedAcquire for the attempt that a release of the
-- caller's client carries (mode "3"): the caller's next goroutine, queued
-- as of that release (ARGV[a+7]), takes the key its client has just
-- released only when no other live client queued for it before: it defers
-- to those as a set waiter does (see setAcquire), so that a client whose
-- goroutines keep handing the key to each other cannot keep it from the
-- clients in line, whom the release named (see release). Where nobody
-- waits (no waiting mark), or the first live client in line is the
-- caller's own, it is acquire, and touches no queue: goroutines of one
-- client that hand a key to each other pay for the queue only when
-- another client waits.
local function handoffAcquire(KEYS, ARGV, k, a, shared)
	local reply, counter, waiting, held = admit(KEYS, ARGV, k, a, shared, KEYS[k + 7])
	if reply then
		return reply
	end
	if waiting then
		-- Only another client first in line makes it defer: where the
		-- caller's own client is first, or nobody live is queued (its
		-- goroutines hand the key to each other), it takes the key at
		-- once, without entering the queue.
		local first = string.match(nextWaiters(KEYS[k + 5], KEYS[k + 6], tonumber(ARGV[a + 5])), "^ (%S+)")
		if first ~= nil and first ~= ARGV[a + 6] then
			return setAcquire(KEYS, ARGV, k, a, shared)
		end
	end
	reply = grant(KEYS, ARGV, k, a, shared, counter, held)
	if reply[1] == 0 then
		reply = {0, reply[2], enqueue(KEYS, ARGV, k, a)}
	end
	return reply
end

local function queuedAcquire(KEYS, ARGV, k, a, shared)
	local queue, deadlines, id = KEYS[k + 5], KEYS[k + 6], ARGV[a + 6]
	if ARGV[a + 9] == "2" then
		return setAcquire(KEYS, ARGV, k, a, shared)
	end
	if ARGV[a + 9] == "5" then
		return setAcquire(KEYS, ARGV, k, a, shared, ARGV[a + 10])
	end
	if ARGV[a + 9] == "3" then
		return handoffAcquire(KEYS, ARGV, k, a, shared)
	end
	-- A newcomer to a key nobody waits for (the common case) reads the
	-- waiting mark with the counter, and nothing more; nor does one that
	-- finds the key held, which queues at once.
	local reply, counter, waiting, held = admit(KEYS, ARGV, k, a, shared, KEYS[k + 7])
	if not reply and waiting and not held and ARGV[a + 9] == "1" then
		local first = nextWaiters(queue, deadlines, tonumber(ARGV[a + 5]))
		if first ~= "" and first ~= " " .. id then
			reply = {0, "0", 0}
		end
	elseif not reply and waiting and not held and ARGV[a + 9] == "4" then
		local first = string.match(nextWaiters(queue, deadlines, tonumber(ARGV[a + 5])), "^ (%S+)")
		if first ~= nil and first ~= id then
			reply = {0, "0", 0}
		end
	elseif not reply and waiting and not held and readerFirst(queue, deadlines, ARGV[a + 7], tonumber(ARGV[a + 5])) then
		-- A later attempt takes a free key whoever is queued, but for a
		-- reader first in line that came before it.
		reply = {0, "0", 0}
	end
	reply = reply or grant(KEYS, ARGV, k, a, shared, counter, held)
	if reply[1] == 1 and (waiting or ARGV[a + 9] ~= "1") then
		-- Granted: the client's entry, if this node has it, is now the
		-- winner's, whose release takes it out (see release); an entry left
		-- with an earlier acquisition's time would outlive every release.
		redis.call("ZADD", queue, "XX", ARGV[a + 7], id)
		endWithLock(deadlines, id, ARGV[a + 5], ARGV[a + 2], ARGV[a + 8])
	end
	if reply[1] == 0 then
		reply = {0, reply[2], enqueue(KEYS, ARGV, k, a)}
	end
	return reply
end
