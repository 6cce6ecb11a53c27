package nodes

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat (USER_HZ),
// 100 Hz on every Linux configuration that matters here.
const clockTick = 10 * time.Millisecond

// CPU returns the user+system CPU time the servers have used so far, summed,
// with a resolution of 10 ms. It returns 0 where /proc is not available.
func (s *Set) CPU() time.Duration {
	var total time.Duration
	for _, pid := range s.PIDs() {
		total += processCPU(pid)
	}
	return total
}

// processCPU reads utime+stime of pid from /proc/<pid>/stat.
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name; utime and stime are the
	// 14th and 15th fields of the whole line.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * clockTick
}

// Median returns the middle value of d, 0 for none.
func Median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
