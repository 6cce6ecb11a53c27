-- recoveryLeft decides whether a node is recovering under the restart
-- quarantine, and so withholds its vote. marker is the restart marker's value
-- ("redlock:marker") and writer the run_id of the process that wrote it
-- ("redlock:process"), each false when absent; delay is the recovery delay in
-- microseconds, 0 when the quarantine is off. The node's clock and run_id are
-- read through shared (see clock.lua, process.lua), and only when needed.
-- Returns the microseconds the node stays recovering, 0 when it is not, and
-- nil when the marker is not a number; and, second, whether the node's
-- process changed since the marker was written (a restart, or a failover to
-- a replica), which the next acquisition turns into a fresh quarantine.
-- A node without the marker lost its data or never served a lock: it is
-- recovering for the whole delay, which its next acquisition starts. A
-- marker without a writer was written before writers were recorded: it is
-- judged by its time alone.
local function recoveryLeft(shared, marker, writer, delay)
	if delay <= 0 then
		return 0, false
	end
	if not marker then
		return delay, false
	end
	local since = tonumber(marker)
	if not since then
		return nil, false
	end
	if writer and writer ~= processID(shared) then
		return delay, true
	end
	local t = nodeClock(shared)
	local left = since + delay - (tonumber(t[1]) * 1000000 + tonumber(t[2]))
	if left > 0 then
		return left, false
	end
	return 0, false
end
