package history

import "sort"

// Op is an invocation paired with its completion.
type Op struct {
	// Invoked is the Invoke event.
	Invoked Event
	// Completed is the OK, Fail or Info event that ended the operation; its
	// Type is empty when the operation never completed (the process died,
	// or the run ended first).
	Completed Event
}

// Process returns the process that ran the operation.
func (o Op) Process() string { return o.Invoked.Process }

// Name returns the operation's name (OpAcquire, ...).
func (o Op) Name() string { return o.Invoked.Op }

// Done reports whether the operation completed.
func (o Op) Done() bool { return o.Completed.Type != "" }

// OK reports whether the operation completed and took effect.
func (o Op) OK() bool { return o.Completed.Type == OK }

// Ops pairs the invocations of events with their completions (same Process
// and ID) and returns the operations in invocation order. Events of other
// types are ignored.
func Ops(events []Event) []Op {
	type key struct {
		proc string
		id   int64
	}
	index := map[key]int{}
	var ops []Op
	for _, ev := range events {
		k := key{ev.Process, ev.ID}
		switch ev.Type {
		case Invoke:
			index[k] = len(ops)
			ops = append(ops, Op{Invoked: ev})
		case OK, Fail, Info:
			if i, ok := index[k]; ok && !ops[i].Done() {
				ops[i].Completed = ev
			}
		}
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Invoked.Time < ops[j].Invoked.Time })
	return ops
}

// Fault is an injected fault, from its start to its end.
type Fault struct {
	Kind   string // the fault's Op
	Target string
	Detail string
	Start  int64
	// End equals Start for an instantaneous fault; it is the end of the
	// history for a fault that never ended.
	End int64
}

// Faults returns the faults recorded by the nemesis in events, ordered by
// start. A fault still active at the end of events ends at the last event's
// time.
func Faults(events []Event) []Fault {
	type key struct {
		proc string
		id   int64
	}
	var last int64
	open := map[key]int{}
	var faults []Fault
	for _, ev := range events {
		last = max(last, ev.Time)
		if ev.Process != ProcNemesis {
			continue
		}
		k := key{ev.Process, ev.ID}
		switch ev.Type {
		case Start:
			open[k] = len(faults)
			faults = append(faults, Fault{Kind: ev.Op, Target: ev.Target, Detail: ev.Detail, Start: ev.Time, End: -1})
		case End:
			if i, ok := open[k]; ok {
				faults[i].End = ev.Time
				if ev.Detail != "" {
					faults[i].Detail += "; " + ev.Detail
				}
				delete(open, k)
			}
		case Info:
			faults = append(faults, Fault{Kind: ev.Op, Target: ev.Target, Detail: ev.Detail, Start: ev.Time, End: ev.Time})
		}
	}
	for i := range faults {
		if faults[i].End < 0 {
			faults[i].End = last
		}
	}
	sort.SliceStable(faults, func(i, j int) bool { return faults[i].Start < faults[j].Start })
	return faults
}
