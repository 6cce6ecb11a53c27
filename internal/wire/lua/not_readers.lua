-- notReaders returns, for a key that is a sorted set with an expiry, an
-- error when it is no readers' set (see readers.lua): its first member is
-- no token of this library, which begins with its random part and a dot
-- and ends with its TTL in milliseconds ("<random>.<...>.<ttl>[+<delay>]").
-- The set is then another program's data, which a reader must neither
-- join nor prune, and a forced release must not delete. It returns nil for
-- a readers' set.
local function notReaders(key)
	local first = redis.call("ZRANGE", key, 0, 0)[1]
	if first == nil or string.match(first, "^[%w_%-]+%..*%d$") then
		return nil
	end
	return redis.error_reply("redlock: " .. key .. " holds a sorted set that is no lock's readers " ..
		"(another program's key?): no release will free it; lock another name, or delete that key")
end
