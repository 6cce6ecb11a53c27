-- processID returns the run_id of the Redis process running the script (INFO
-- server). A restart, or a failover to a replica, changes it, whatever the
-- data set reloaded. Where the script's user may not run INFO (an ACL
-- without it, a renamed command), restarts that reload older data would go
-- unseen, so the script fails with an error that no retry fixes instead of
-- voting: the quarantine only calls for it with the quarantine on. It is ""
-- where INFO runs but reports no run_id (a server without one, such as an
-- emulator that keeps nothing across a restart): the marker's time alone
-- then counts.
-- It is read once per script call: shared, the table that the requests of
-- one script call share, keeps it as shared.runID. In the function library
-- (see library.go), processRunID keeps it for as long as the process keeps
-- the library loaded, which a process's run_id outlives: the library is
-- loaded into one process, and its locals end with it.
-- The field is found by a plain search and its value matched in place: a
-- pattern searched from the start of the reply cost the acquire script
-- about 2.5 µs more per call (redis-benchmark, INFO commandstats).
local processRunID
local function processID(shared)
	local id = processRunID or shared.runID
	if not id then
		local info = redis.pcall("INFO", "server")
		if type(info) == "table" and info.err and not string.find(info.err, "not supported", 1, true) then
			local msg = "redlock: INFO server refused (" .. info.err .. "): the restart quarantine reads the " ..
				"run_id of the node's process to see a restart; allow INFO for this user (+info), or give that " ..
				"guarantee up with Options.DisableQuarantine"
			-- Redis 6.2 (no REDIS_VERSION) cannot raise a table: its error
			-- handler concatenates the error with its line.
			error(redis.REDIS_VERSION and {err = msg} or msg)
		end
		local at = type(info) == "string" and string.find(info, "run_id:", 1, true)
		id = at and string.match(info, "^%x+", at + 7) or ""
		shared.runID = id
		if id ~= "" then
			processRunID = id
		end
	end
	return id
end
