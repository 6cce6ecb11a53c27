package report

import (
	"fmt"
	"slices"
	"strings"
)

// writeLockKinds writes the semaphore and read-write lock cases: what each
// library ran for them, its grants and its waits.
func (r *Report) writeLockKinds(b *strings.Builder) {
	var sem, rw []Case
	for _, c := range r.Cases {
		switch {
		case c.Limit > 0:
			sem = append(sem, c)
		case c.WriteEvery > 0:
			rw = append(rw, c)
		}
	}
	if len(sem)+len(rw) == 0 {
		return
	}
	b.WriteString("\n### Semaphores and read-write locks\n\nOne client's goroutines on one name (several clients' where said), each looping: acquire " +
		"(blocking, the library's own way of waiting), a tiny hold, release. Only redlock has semaphores and " +
		"read-write locks; the peers run the nearest substitute they offer (column \"how\"). Wait: in acquire. " +
		"Timed out: acquisitions begun in the measured window that reached their deadline.\n")
	r.writeSemaphores(b, sem)
	r.writeReadWrite(b, rw)
}

// writeSemaphores writes the semaphore cases' table.
func (r *Report) writeSemaphores(b *strings.Builder, cs []Case) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintf(b, "\nA semaphore of %d permits, for %d goroutines. Hand-made: a mutex per permit (`name:permit:i`), each "+
		"tried once without waiting, in turn from a random one on; when all are held, the retry delay of the other "+
		"cases, then all again.\n\n", cs[0].Limit, cs[0].Workers)
	for _, c := range cs {
		if c.Clients > 0 {
			fmt.Fprintf(b, "In `%s` the goroutines are spread over %d clients, as over %d processes; "+
				"each client has its own connections.\n\n", c.ID, c.Clients, c.Clients)
		}
	}
	b.WriteString("| case | library | how | grants/s | p50 wait | p99 wait | max wait | timed out | errors |\n" +
		"|---|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range cs {
		for _, l := range r.Libraries {
			row, ok := r.Row(c.ID, l.Name)
			if !ok {
				continue
			}
			fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s | %s | %s | %d | %d |\n", c.ID, l.Name, l.Semaphore,
				Num(row.Rate), Dur(row.P50Us), Dur(row.P99Us), Dur(row.MaxUs), row.Timeouts, row.Errors)
		}
	}
}

// writeReadWrite writes the read-write cases' table, readers and writers
// apart.
func (r *Report) writeReadWrite(b *strings.Builder, cs []Case) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintf(b, "\nA read-write lock for %d goroutines, one cycle in %d of each a writer's, the others readers'. "+
		"A plain mutex admits one reader at a time. Grants/s counts both kinds, then each apart.\n\n",
		cs[0].Workers, cs[0].WriteEvery)
	b.WriteString("| case | library | how | grants/s | reads/s | p50 read wait | p99 read wait | writes/s | p50 write wait | p99 write wait | timed out | errors |\n" +
		"|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range cs {
		for _, l := range r.Libraries {
			row, ok := r.Row(c.ID, l.Name)
			if !ok {
				continue
			}
			rd, wr := orNone(row.Readers), orNone(row.Writers)
			fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %d |\n", c.ID, l.Name, l.ReadWrite,
				Num(row.Rate), Num(rd.Rate), Dur(rd.P50Us), Dur(rd.P99Us), Num(wr.Rate), Dur(wr.P50Us), Dur(wr.P99Us),
				row.Timeouts, row.Errors)
		}
	}
}

// orNone returns *g, or no grants if g is nil.
func orNone(g *Grants) Grants {
	if g == nil {
		return Grants{}
	}
	return *g
}

// lockKindSettings returns what l runs for the semaphore and read-write
// cases of the report, as a sentence for its settings, or "".
func (r *Report) lockKindSettings(l Library) string {
	var parts []string
	for _, c := range r.Cases {
		switch {
		case c.Limit > 0 && l.Semaphore != "":
			parts = append(parts, "semaphore cases: "+l.Semaphore)
		case c.WriteEvery > 0 && l.ReadWrite != "":
			parts = append(parts, "read-write cases: "+l.ReadWrite)
		}
	}
	var out []string
	for _, p := range parts {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " In the " + strings.Join(out, "; in the ") + "."
}
