-- shardedForceRelease is forceRelease on a Redis Cluster node.
local function shardedForceRelease(KEYS, ARGV, k, a, shared)
	return forceRelease(KEYS, ARGV, k, a, shared, true)
end
