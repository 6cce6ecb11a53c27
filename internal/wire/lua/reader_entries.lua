-- A reader waiting in Acquire (WithShared) has an entry of its own in the
-- key's queue of waiting clients (see queuedAcquire): its client's id, "+r"
-- (no client id has a "+") and a number of the client's, scored, as a
-- writer's entry is, by when it began waiting; its release, or its giving
-- up, takes the entry out on every node. A writer's later attempts defer
-- to a reader first in line that began waiting before them, and a reader
-- waits only for the writers queued before it: readers and writers are
-- served in the order they came, the readers that come together taking
-- the key together (see SAFETY.md, "Read-write lock").
--
-- isReaderEntry reports whether a queue entry is a reader's.
local function isReaderEntry(entry)
	return string.find(entry, "+r", 1, true) ~= nil
end

-- clientOf returns the id of the client of a queue entry: the entry
-- itself, or a reader's up to its "+r".
local function clientOf(entry)
	return (string.match(entry, "^[^+]*"))
end

-- readerFirst reports whether the first entry of a key's queue (queue,
-- deadlines) is a live reader's that began waiting before since (when the
-- caller began waiting, in microseconds on its clock), now being the
-- caller's clock in microseconds: a writer's attempt then defers to it.
local function readerFirst(queue, deadlines, since, now)
	local first = redis.call("ZRANGE", queue, 0, 0, "WITHSCORES")
	if #first == 0 or not isReaderEntry(first[1]) or tonumber(first[2]) >= tonumber(since) then
		return false
	end
	local ends = redis.call("HGET", deadlines, first[1])
	return ends ~= false and tonumber(ends) > now
end

-- writerBefore reports whether a live writer's entry in a key's queue
-- (queue, deadlines) began waiting before since (microseconds on the
-- reader's clock; "" for a reader that does not wait, TryAcquire, which
-- then yields to every writer queued), now being the reader's clock in
-- microseconds: a reader is then refused, and waits behind it. It looks
-- at the first 1,024 entries before since, readers' and stale ones
-- included, 64 at a time.
local function writerBefore(queue, deadlines, since, now)
	local before = "+inf"
	if since ~= "" then
		before = "(" .. since
	end
	for from = 0, 960, 64 do
		local ids = redis.call("ZRANGEBYSCORE", queue, "-inf", before, "LIMIT", from, 64)
		for _, id in ipairs(ids) do
			if not isReaderEntry(id) then
				local ends = redis.call("HGET", deadlines, id)
				if ends and tonumber(ends) > now then
					return true
				end
			end
		end
		if #ids < 64 then
			return false
		end
	end
	return false
end
