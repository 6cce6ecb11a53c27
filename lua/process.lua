-- processID returns the run_id of the Redis process running the script (INFO
-- server), read once per script call: shared, the table that the requests of
-- one script call share, keeps it as shared.runID. A restart, or a failover
-- to a replica, changes it, whatever the data set reloaded. It is "" where
-- INFO is refused (an ACL without it, a server that does not report a
-- run_id): restarts are then not seen, and the marker's time alone counts.
local function processID(shared)
	local id = shared.runID
	if not id then
		local info = redis.pcall("INFO", "server")
		id = type(info) == "string" and string.match(info, "run_id:(%x+)") or ""
		shared.runID = id
	end
	return id
end
