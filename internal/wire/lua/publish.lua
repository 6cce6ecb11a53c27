-- publish announces message on channel by PUBLISH: how release announces
-- on a server that is not a Redis Cluster. By pcall: a PUBLISH refused
-- (an ACL user without the channel; Dial refuses such a node) must not
-- fail the release or forced release that already took effect, whose
-- waiters then find the key free by their retries.
local function publish(channel, message)
	redis.pcall("PUBLISH", channel, message)
end
