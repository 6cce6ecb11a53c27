-- notALock returns, for a key that a lock acquisition found held, an error
-- when the key has no expiry: every lock, of this library or another
-- Redlock one, and every readers' set has one, so the key is another
-- program's data, which no wait would see released. It returns nil
-- otherwise, for the caller to refuse as for a held lock.
local function notALock(key)
	if redis.call("PTTL", key) == -1 then
		return redis.error_reply("redlock: " .. key .. " holds data without an expiry (another program's key?), " ..
			"not a lock: no release will free it; lock another name, or delete that key")
	end
	return nil
end
