-- listen sets a key's waiting mark (see markWaiting) for a client that
-- listens for the key's releases without trying for it (an election's
-- observer), so that its releases are announced. It reads its request's
-- keys and arguments at offsets k and a in KEYS and ARGV.
-- KEYS[k+1] the key's waiting mark; ARGV[a+1] how long it lasts, in
-- milliseconds.
-- Returns 1.
local function listen(KEYS, ARGV, k, a, shared)
	markWaiting(KEYS[k + 1], tonumber(ARGV[a + 1]))
	return 1
end
