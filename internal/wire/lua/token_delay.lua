-- tokenDelay returns the lock-delay a token carries, in milliseconds ("+"
-- and the delay after its TTL, see AttemptStrings), or nil when it carries
-- none. A token without a delay costs one search for "+".
local function tokenDelay(token)
	if not string.find(token, "+", 1, true) then
		return nil
	end
	return tonumber(string.match(token, "%+(%d+)$"))
end
