package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Memory is what distinct lock names leave behind on the nodes, per
// library: each acquired and released Names names on nodes of its own.
type Memory struct {
	Meta      Meta        `json:"meta"`
	Libraries []Library   `json:"libraries"`
	Names     int         `json:"names"`
	Workers   int         `json:"workers"` // goroutines taking and releasing the names
	WaitS     float64     `json:"wait_s"`  // the least time between a library's last release and the last reading
	Rows      []MemoryRow `json:"results"`
}

// MemoryRow is one library's residue, averaged over its nodes.
type MemoryRow struct {
	Library string `json:"library"`
	NA      string `json:"na,omitempty"`
	Nodes   int    `json:"nodes"`
	// Bytes and keys per distinct name per node: the growth of used_memory
	// and DBSIZE since before the library's first cycle, over the names,
	// right after its last release (its clients closed) and after the wait.
	BytesPerNameAfterRelease float64 `json:"bytes_per_name_after_release"`
	KeysPerNameAfterRelease  float64 `json:"keys_per_name_after_release"`
	BytesPerName             float64 `json:"bytes_per_name"`
	KeysPerName              float64 `json:"keys_per_name"`
	// WaitedS is how long after the library's last release the last
	// reading was taken.
	WaitedS float64 `json:"waited_s"`
	// Errors counts the names whose cycle failed; LastError is the last
	// failure.
	Errors    int64  `json:"errors"`
	LastError string `json:"last_error,omitempty"`
}

// WriteMarkdown writes the run's facts and a table of the residue.
func (m *Memory) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	r := Report{Meta: m.Meta, Libraries: m.Libraries}
	r.writeHeader(&b)
	fmt.Fprintf(&b, "Each library acquired and released %s distinct names, %d at a time, on nodes of its own, "+
		"new and empty; then its clients were closed. Bytes per name are the growth of the nodes' `used_memory`, "+
		"keys per name of their keys (`INFO keyspace`), over the names, per node (the mean over the library's "+
		"nodes): right after the last release, and again at least %gs later.\n\n", Num(float64(m.Names)), m.Workers, m.WaitS)
	b.WriteString("| library | nodes | bytes/name after release | keys/name after release | bytes/name later | keys/name later | later: s after release | errors |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range m.Rows {
		if row.NA != "" {
			fmt.Fprintf(&b, "| %s | n/a: %s | | | | | | |\n", row.Library, row.NA)
			continue
		}
		errs := fmt.Sprint(row.Errors)
		if row.LastError != "" {
			errs += fmt.Sprintf(" (last: %s)", strings.ReplaceAll(clip(row.LastError, 80), "|", "/"))
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %.0f | %s |\n", row.Library, row.Nodes,
			Num(row.BytesPerNameAfterRelease), Num(row.KeysPerNameAfterRelease), Num(row.BytesPerName), Num(row.KeysPerName),
			row.WaitedS, errs)
	}
	r.writeSettings(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the residue as indented JSON.
func (m *Memory) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(m)
}
