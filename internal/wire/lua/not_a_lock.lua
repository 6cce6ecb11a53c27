-- notALock returns, for a key that a lock acquisition found held but that
-- holds no string (the value of a lock), an error when the key has no
-- expiry: a readers' set, and every lock of another Redlock library kept
-- in a hash, has one, so the key is another program's data, which no
-- wait would see released. It returns nil otherwise, for the caller to
-- refuse as for a held lock. A string without an expiry may be a lock of
-- a library that sets none, or sets it by a second command, which its
-- holder releases: that is refused as held.
local function notALock(key)
	if redis.call("PTTL", key) == -1 then
		return redis.error_reply("redlock: " .. key .. " holds data of another type than a lock's, without an expiry " ..
			"(another program's key?): no release will free it; lock another name, or delete that key")
	end
	return nil
end
