-- processID returns the run_id of the Redis process running the script (INFO
-- server). A restart, or a failover to a replica, changes it, whatever the
-- data set reloaded. It is "" where INFO is refused (an ACL without it, a
-- server that does not report a run_id): restarts are then not seen, and the
-- marker's time alone counts.
-- It is read once per script call: shared, the table that the requests of
-- one script call share, keeps it as shared.runID. In the function library
-- (see library.go), processRunID keeps it for as long as the process keeps
-- the library loaded, which a process's run_id outlives: the library is
-- loaded into one process, and its locals end with it. An empty id is not
-- kept: another caller's ACL may allow INFO.
-- The field is found by a plain search and its value matched in place: a
-- pattern searched from the start of the reply cost the acquire script
-- about 2.5 µs more per call (redis-benchmark, INFO commandstats).
local processRunID
local function processID(shared)
	local id = processRunID or shared.runID
	if not id then
		local info = redis.pcall("INFO", "server")
		local at = type(info) == "string" and string.find(info, "run_id:", 1, true)
		id = at and string.match(info, "^%x+", at + 7) or ""
		shared.runID = id
		if id ~= "" then
			processRunID = id
		end
	end
	return id
end
