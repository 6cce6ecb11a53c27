package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// clientLogSamples is how many distinct go-redis log messages the report
// quotes.
const clientLogSamples = 5

// clientLog collects what go-redis logs (connection trouble, mostly) so that
// it neither garbles the progress bar nor goes unseen: the report counts the
// lines and quotes the first few distinct ones.
type clientLog struct {
	mu      sync.Mutex
	count   int
	samples []string
}

// Printf implements go-redis's logger interface.
func (l *clientLog) Printf(_ context.Context, format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	// Drop the varying connection number so that repeats look alike.
	if i := strings.Index(msg, "conn["); i >= 0 {
		if j := strings.IndexByte(msg[i:], ']'); j > 0 {
			msg = msg[:i] + "conn[…]" + msg[i+j+1:]
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.count++
	if len(l.samples) < clientLogSamples && !contains(l.samples, msg) {
		l.samples = append(l.samples, msg)
	}
}

// take returns and resets what was collected.
func (l *clientLog) take() (int, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, s := l.count, l.samples
	l.count, l.samples = 0, nil
	return n, s
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
