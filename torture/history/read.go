package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
)

// maxLine bounds one JSON line when reading a history.
const maxLine = 1 << 20

// Read decodes a history written as JSON lines and returns its events
// sorted by time (stable, so events with equal times keep file order).
func Read(r io.Reader) ([]Event, error) {
	var events []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var ev Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("history: line %d: %w", line, err)
		}
		events = append(events, ev)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("history: read: %w", err)
	}
	Sort(events)
	return events, nil
}

// ReadFile reads the history at path (see Read).
func ReadFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	return Read(f)
}

// Sort sorts events by time, keeping the order of equal times.
func Sort(events []Event) {
	sort.SliceStable(events, func(i, j int) bool { return events[i].Time < events[j].Time })
}
