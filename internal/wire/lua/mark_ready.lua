-- markReady marks a node ready to vote at once: sets the restart marker to
-- "0" when it is missing or the node is still recovering (see
-- quarantine.lua). Unless forced, it refuses a node that restarted or failed
-- over and has not sat out its quarantine, and a recovering node that is not
-- as MarkReady's check read it (see as_checked.lua): either may have
-- forgotten a lock that is still held. It reads its request's keys and
-- arguments at offsets k and a in KEYS and ARGV; shared is the table that the
-- requests of one script call share (see acquire.lua).
-- KEYS[k+1] restart marker ("redlock:marker"); KEYS[k+2] its process key
-- ("redlock:process"); ARGV[a+1] recovery delay in microseconds; ARGV[a+2]
-- "1" to force; unless forced, ARGV[a+3] the number n of nodes the check
-- read, and ARGV[a+4] to ARGV[a+3+2n] each node's run_id and marker ("" when
-- absent) as the check read them.
-- Returns 1 when the marker was set, 0 when the node was already ready, and
-- an error when it refuses, and when the marker key holds something that
-- is not a number: another program's key, which it never overwrites.
local function markReady(KEYS, ARGV, k, a, shared)
	local marker, writer = restartMarker(shared, KEYS[k + 1], KEYS[k + 2])
	if marker and not tonumber(marker) then
		-- Not a marker this library wrote: another program's key by that
		-- name, which it must not overwrite.
		return redis.error_reply("redlock: " .. KEYS[k + 1] .. " holds a value this library did not write " ..
			"(another program's key?); not marked ready: rename or delete that key")
	end
	local left, restarted, afterRestart = recoveryLeft(shared, marker, writer, tonumber(ARGV[a + 1]))
	if (restarted or afterRestart) and ARGV[a + 2] ~= "1" then
		return redis.error_reply("redlock: the node restarted or failed over " ..
			"and has not sat out its recovery delay: it may have forgotten a lock that is still held; not marked ready unless forced")
	end
	if marker and left == 0 and not restarted then
		if not writer then
			-- A marker from before writers were recorded: adopt it.
			redis.call("SET", KEYS[k + 2], processID(shared))
			shared.writer = processID(shared)
		end
		return 0
	end
	if ARGV[a + 2] ~= "1" and not asChecked(ARGV, a + 3, processID(shared), marker or "") then
		return redis.error_reply("redlock: the node's process or restart marker changed since MarkReady checked " ..
			"the deployment (a restart, a failover, or its data deleted): not marked ready; run MarkReady again")
	end
	setMarker(shared, KEYS[k + 1], KEYS[k + 2], "0")
	return 1
end
