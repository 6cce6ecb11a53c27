-- keepPlace renews a waiting client's place in a key's queue (see
-- enterQueue), and the key's waiting mark, between two of its attempts
-- further apart than the place lasts: a waiter keeps its place in line, and
-- the key's releases still name it, whatever its retry delay. It grants
-- nothing: only an attempt takes the key. It reads its request's keys and
-- arguments at offsets k and a in KEYS and ARGV.
-- KEYS[k+1] the key's queue; KEYS[k+2] its deadlines; KEYS[k+3] its
-- waiting mark; ARGV[a+1] the client id; ARGV[a+2] when it began waiting,
-- in microseconds on its clock; ARGV[a+3] its clock now, in microseconds;
-- ARGV[a+4] how long the place lasts, in microseconds.
-- Returns the client's place in the queue.
local function keepPlace(KEYS, ARGV, k, a, shared)
	return enterQueue(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4])
end
