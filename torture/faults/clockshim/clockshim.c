// clockshim: an LD_PRELOAD library that moves a process's wall clock.
//
// It replaces clock_gettime (for the realtime clocks), gettimeofday and time
// with versions that add a shift read from a small shared file, so a test
// harness can make one redis-server's clock jump forward or run fast while
// the rest of the machine keeps real time. Redis 7 expires keys by this
// clock, so a shifted node expires keys early or late.
//
// The file named by CLOCKSHIM_FILE holds three little-endian int64 values:
//
//	offset_ns  added to the real time
//	rate_ppm   how much faster than real time the clock runs, in parts per million
//	base_ns    the real time (CLOCK_REALTIME, ns) from which rate_ppm counts
//
// so that fake = real + offset_ns + (real - base_ns) * rate_ppm / 1e6.
// The file is mapped shared, so a write to it takes effect at the next
// clock read, without signals or restarts.
//
// Real times are read with raw system calls, never through dlsym: libfaketime
// resolves the originals with dlsym, which allocates, and deadlocks a
// jemalloc-linked redis-server that reads the clock while its allocator
// starts up. Monotonic clocks are passed through untouched.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile const int64_t *shift; // NULL until the file is mapped
static volatile int mapping;          // a mapping attempt is in progress

static void map_file(void) {
	if (shift != NULL || __sync_lock_test_and_set(&mapping, 1)) {
		return;
	}
	const char *path = getenv("CLOCKSHIM_FILE");
	if (path != NULL) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			void *p = mmap(NULL, 3 * sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
			close(fd);
			if (p != MAP_FAILED) {
				shift = p;
			}
		}
	}
	// Left set on failure: the clock stays real rather than retrying the
	// open on every read.
}

__attribute__((constructor)) static void clockshim_init(void) { map_file(); }

static int64_t real_ns(void) {
	struct timespec ts;
	syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t fake_ns(void) {
	int64_t real = real_ns();
	if (shift == NULL) {
		return real;
	}
	int64_t offset = shift[0], ppm = shift[1], base = shift[2];
	int64_t skew = 0;
	if (ppm != 0 && real > base) {
		skew = (int64_t)((__int128)(real - base) * ppm / 1000000);
	}
	return real + offset + skew;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
	if (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE) {
		return (int)syscall(SYS_clock_gettime, id, ts);
	}
	int64_t ns = fake_ns();
	ts->tv_sec = ns / 1000000000;
	ts->tv_nsec = ns % 1000000000;
	return 0;
}

// glibc declares tv nonnull, but callers may still pass NULL.
#pragma GCC diagnostic ignored "-Wnonnull-compare"
int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
	(void)tz;
	if (tv != NULL) {
		int64_t ns = fake_ns();
		tv->tv_sec = ns / 1000000000;
		tv->tv_usec = (ns % 1000000000) / 1000;
	}
	return 0;
}

time_t time(time_t *out) {
	time_t s = (time_t)(fake_ns() / 1000000000);
	if (out != NULL) {
		*out = s;
	}
	return s;
}
