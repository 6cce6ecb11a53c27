-- publish announces message on channel by PUBLISH: how release announces
-- on a server that is not a Redis Cluster.
local function publish(channel, message)
	redis.call("PUBLISH", channel, message)
end
