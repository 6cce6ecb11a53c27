-- sendAnnouncement sends message, a release's announcement, by send(channel,
-- message): to each client that names lists (each after a space, see
-- nextWaiters) on its own channel for the key (channel, a space and the
-- client's id), or to channel when names is "".
local function sendAnnouncement(send, channel, message, names)
	if names == "" then
		send(channel, message)
	end
	for id in string.gmatch(names, "%S+") do
		send(channel .. " " .. id, message)
	end
end
