-- repeatedGrant is admit's reply to a repeated run of an attempt that the
-- node granted (see admit): the grant with the counter that the first run
-- set, or, should the counter have gone since (deleted by hand), a new one
-- as for a new name.
local function repeatedGrant(KEYS, ARGV, k, a, shared, counter)
	if not counter then
		counter = nextFence(KEYS[k + 2], false, ARGV[a + 5], ARGV[a + 4], shared)
		if not counter then
			return brokenCounter(KEYS[k + 2])
		end
	end
	return {1, counter, 0}
end
