-- shardedRelease is release on a Redis Cluster node: it announces the
-- release by SPUBLISH, which reaches the subscribers of the key's shard
-- only, where PUBLISH reaches every node of the cluster. The channel
-- (ARGV[a+2] followed by the key) carries the tag of the key's slot, so
-- that it is a shard channel of the slot the script runs in: a cluster
-- refuses a script's SPUBLISH on a channel that another master serves.
-- Where SPUBLISH fails (Redis before 7.0 has none), it announces by PUBLISH
-- on the same channel, as release does, so that the release itself never
-- fails for want of it.
local function shardedRelease(KEYS, ARGV, k, a, shared)
	return release(KEYS, ARGV, k, a, shared, function(channel, message)
		local sent = redis.pcall("SPUBLISH", channel, message)
		if type(sent) == "table" and sent.err then
			redis.pcall("PUBLISH", channel, message)
		end
	end)
end
