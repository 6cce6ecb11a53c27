-- sendAnnouncement sends message, a release's announcement, by send(channel,
-- message): to each client that names lists (each after a space, see
-- nextWaiters) on its own channel for the key (channel, a space and the
-- client's id), or to channel when names is "". A reader's entry named
-- (see reader_entries.lua) goes to its client's channel; when it is named
-- first, the message goes to channel too: the readers behind it, whom the
-- release does not name, may take the key together with it, and the
-- writers that it wakes there defer to it. Not when a writer is first in
-- line: the writers behind it would race it.
local function sendAnnouncement(send, channel, message, names)
	local first = true
	for id in string.gmatch(names, "%S+") do
		if first and isReaderEntry(id) then
			send(channel, message)
		end
		first = false
		send(channel .. " " .. clientOf(id), message)
	end
	if names == "" then
		send(channel, message)
	end
end
