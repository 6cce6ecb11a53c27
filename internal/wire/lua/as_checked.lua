-- asChecked reports whether a node is as MarkReady's check read it: the
-- same process (its run_id is id), and the marker it had then, if it had
-- one. A marker written since where the check found none is the start of a
-- quarantine by an acquisition, not a loss. ARGV[at] is the number of nodes
-- the check read, and each node's run_id and marker ("" when absent)
-- follow. Nodes where INFO is refused all have the id "" (see process.lua):
-- the marker then needs to match one of theirs.
local function asChecked(ARGV, at, id, marker)
	for i = at + 1, at + 2 * tonumber(ARGV[at]), 2 do
		if ARGV[i] == id and (ARGV[i + 1] == "" or ARGV[i + 1] == marker) then
			return true
		end
	end
	return false
end
