-- recoveryLeft decides whether a node is recovering under the restart
-- quarantine, and so withholds its vote. marker is the restart marker's value
-- ("redlock:marker") and writer the run_id of the process that wrote it
-- ("redlock:process", followed by " restart" when a restart started the
-- quarantine), each false when absent; delay is the recovery delay in
-- microseconds, 0 when the quarantine is off. The node's clock and run_id are
-- read through shared (see clock.lua, process.lua), and only when needed.
-- Returns the microseconds the node stays recovering, 0 when it is not, and
-- nil when the marker is not a number; second, whether the node's process
-- changed since the marker was written (a restart, or a failover to a
-- replica), which the next acquisition turns into a fresh quarantine; third,
-- whether the node is sitting out a quarantine that a restart started.
-- A node without the marker lost its data or never served a lock: it is
-- recovering for the whole delay, which its next acquisition starts. A
-- marker without a writer was written before writers were recorded: it is
-- judged by its time alone.
local function recoveryLeft(shared, marker, writer, delay)
	if delay <= 0 then
		return 0, false, false
	end
	if not marker then
		return delay, false, false
	end
	local since = tonumber(marker)
	if not since then
		return nil, false, false
	end
	if writer and string.match(writer, "^%x*") ~= processID(shared) then
		return delay, true, false
	end
	local t = nodeClock(shared)
	local left = since + delay - (tonumber(t[1]) * 1000000 + tonumber(t[2]))
	if left > 0 then
		return left, false, writer and string.find(writer, " restart", 1, true) ~= nil
	end
	return 0, false, false
end
