-- sendAnnouncement sends message, a release's announcement, by send(channel,
-- message): to each client that names lists (each after a space, see
-- nextWaiters) on its own channel for the key (channel, a space and the
-- client's id), or to channel when names is "". A reader's entry named
-- (see reader_entries.lua) goes to its client's channel, and the message to
-- channel too: the readers behind it, whom the release does not name, may
-- take the key together with it.
local function sendAnnouncement(send, channel, message, names)
	local readers = false
	for id in string.gmatch(names, "%S+") do
		readers = readers or isReaderEntry(id)
		send(channel .. " " .. clientOf(id), message)
	end
	if names == "" or readers then
		send(channel, message)
	end
end
