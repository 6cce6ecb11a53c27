-- listened reports whether a client subscribes to channel on this server
-- (PUBSUB NUMSUB): a release that names nobody is announced there only
-- then, as a PUBLISH that nobody hears still costs the server, and its
-- replicas, which it is replicated to. Where PUBSUB is refused it says yes.
local function listened(channel)
	local subscribers = redis.pcall("PUBSUB", "NUMSUB", channel)
	return type(subscribers) ~= "table" or subscribers.err ~= nil or tonumber(subscribers[2]) ~= 0
end
