package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/redlock-go/redlock/torture"
	"github.com/redlock-go/redlock/torture/check"
	"github.com/redlock-go/redlock/torture/history"
)

// Timeline geometry, in pixels.
const (
	labelWidth = 120.0
	plotWidth  = 1000.0
	axisHeight = 22.0
	faultRow   = 14.0
	workerRow  = 20.0
	nodeRow    = 12.0
	regRow     = 14.0
	rowGap     = 3.0
	// bandShare is the share of the window above which a fault is drawn
	// only in its row, not as a band over the whole timeline: a fault that
	// lasts the whole run (a split, a skew) would hide everything else.
	bandShare = 0.6
)

// Colours. Red is kept for violations.
const (
	violationColor = "#d62728"
	refusedColor   = "#ff7f0e"
)

var workerColors = []string{"#4e79a7", "#59a14f", "#9c755f", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#bab0ac"}

var faultColors = map[string]string{
	"kill":         "#7f7f7f",
	"restart":      "#8c564b",
	"pause-node":   "#bcbd22",
	"pause-worker": "#8c6d31",
	"partition":    "#17becf",
	"blackhole":    "#1f77b4",
	"latency":      "#9edae5",
	"clock-jump":   "#e377c2",
	"clock-skew":   "#f7b6d2",
	"evict":        "#9467bd",
	"split":        "#c5b0d5",
}

func faultColor(kind string) string {
	if c, ok := faultColors[kind]; ok {
		return c
	}
	return "#aaaaaa"
}

// view is one drawing of a run's timeline between from and to.
type view struct {
	o        *torture.Outcome
	from, to int64
	b        strings.Builder
	order    []string           // row names, top to bottom
	rows     map[string]float64 // row name → top
	heights  map[string]float64
	height   float64
}

// timeline draws o's run between from and to as an inline SVG.
func timeline(o *torture.Outcome, from, to int64) template.HTML {
	v := &view{o: o, from: from, to: to, rows: map[string]float64{}, heights: map[string]float64{}}
	y := axisHeight
	add := func(name string, h float64) {
		v.order = append(v.order, name)
		v.rows[name], v.heights[name] = y, h
		y += h + rowGap
	}
	add("faults", faultRow)
	for i := range o.Scenario.Workers {
		add(workerName(i), workerRow)
	}
	nodes := nodeCount(o.Events)
	for i := range nodes {
		add("n"+strconv.Itoa(i), nodeRow)
	}
	add(history.ProcRegister, regRow)
	v.height = y + 4

	fmt.Fprintf(&v.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`,
		labelWidth+plotWidth+10, v.height)
	v.labels()
	v.axis()
	v.faults()
	v.grants()
	v.writes()
	v.violations()
	v.b.WriteString("</svg>")
	return template.HTML(v.b.String())
}

func workerName(i int) string { return "worker-" + strconv.Itoa(i) }

// nodeCount returns the number of nodes seen in per-node outcomes.
func nodeCount(events []history.Event) int {
	n := 0
	for _, ev := range events {
		for _, no := range ev.Nodes {
			n = max(n, no.Node+1)
		}
		if n >= 5 {
			break
		}
	}
	if n == 0 {
		n = 5
	}
	return n
}

// x maps a time to a horizontal position, clamped to the plot.
func (v *view) x(t int64) float64 {
	f := float64(t-v.from) / float64(v.to-v.from)
	return labelWidth + plotWidth*math.Max(0, math.Min(1, f))
}

// visible reports whether [a, b] meets the window.
func (v *view) visible(a, b int64) bool { return b >= v.from && a <= v.to }

// rel formats t relative to the run's start.
func (v *view) rel(t int64) string {
	return fmt.Sprintf("%.3fs", float64(t-v.o.Start)/1e9)
}

func (v *view) labels() {
	for _, name := range v.order {
		top, h := v.rows[name], v.heights[name]
		fmt.Fprintf(&v.b, `<text x="%.0f" y="%.1f" text-anchor="end" fill="#333">%s</text>`, labelWidth-6, top+h/2+4, html.EscapeString(name))
		fmt.Fprintf(&v.b, `<rect x="%.0f" y="%.1f" width="%.0f" height="%.1f" fill="#f6f6f6"/>`, labelWidth, top, plotWidth, h)
	}
}

func (v *view) axis() {
	span := float64(v.to-v.from) / 1e9
	step := niceStep(span / 10)
	first := math.Ceil(float64(v.from-v.o.Start)/1e9/step) * step
	for s := first; s <= float64(v.to-v.o.Start)/1e9+1e-9; s += step {
		t := v.o.Start + int64(s*1e9)
		x := v.x(t)
		fmt.Fprintf(&v.b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.1f" stroke="#ddd"/>`, x, x, axisHeight-4, v.height-4)
		label := strconv.FormatFloat(s, 'f', -1, 64) + "s"
		if step < 0.1 {
			label = strconv.FormatFloat(s*1000, 'f', 0, 64) + "ms"
		}
		fmt.Fprintf(&v.b, `<text x="%.1f" y="%.0f" text-anchor="middle" fill="#666">%s</text>`, x, axisHeight-8, label)
	}
}

// niceStep rounds d up to 1, 2 or 5 times a power of ten.
func niceStep(d float64) float64 {
	if d <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(d)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= d {
			return m * p
		}
	}
	return 10 * p
}

func (v *view) faults() {
	top := v.rows["faults"]
	for _, f := range history.Faults(v.o.Events) {
		if !v.visible(f.Start, f.End) {
			continue
		}
		color := faultColor(f.Kind)
		tip := html.EscapeString(fmt.Sprintf("%s %s from %s to %s: %s", f.Kind, f.Target, v.rel(f.Start), v.rel(f.End), f.Detail))
		x1, x2 := v.x(f.Start), v.x(f.End)
		row, ok := v.rows[f.Target]
		if f.End == f.Start {
			cy := top + faultRow/2
			if ok {
				cy = row + v.heights[f.Target]/2
			}
			fmt.Fprintf(&v.b, `<g><title>%s</title><line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="3,2"/>`+
				`<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/></g>`,
				tip, x1, x1, axisHeight, v.height-4, color, x1, cy, color)
			continue
		}
		long := float64(min(f.End, v.to)-max(f.Start, v.from)) > bandShare*float64(v.to-v.from)
		if !long {
			fmt.Fprintf(&v.b, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.13"/>`,
				x1, axisHeight, math.Max(x2-x1, 1), v.height-4-axisHeight, color)
		}
		if !ok {
			row = top
		}
		y, h := row+1, v.heights[f.Target]-2
		switch {
		case !ok:
			h = faultRow - 2
		case strings.HasPrefix(f.Target, "worker-"):
			// A strip under the worker's row, so that its grants stay
			// visible.
			y, h = row+workerRow-3, 3
		}
		fmt.Fprintf(&v.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.85"><title>%s</title></rect>`,
			x1, y, math.Max(x2-x1, 1.5), h, color, tip)
		if !ok && x2-x1 > 60 {
			fmt.Fprintf(&v.b, `<text x="%.1f" y="%.1f" fill="#222" font-size="10">%s %s</text>`,
				x1+3, row+faultRow-3, html.EscapeString(f.Kind), html.EscapeString(f.Target))
		}
	}
}

func (v *view) grants() {
	for _, g := range check.Grants(history.Ops(v.o.Events)) {
		top, ok := v.rows[g.Worker]
		if !ok || !v.visible(g.Granted, max(g.End(), g.Released)) {
			continue
		}
		color := workerColors[workerIndex(g.Worker)%len(workerColors)]
		x1, x2 := v.x(g.Granted), v.x(g.End())
		released := "never released"
		if g.Released != 0 {
			released = "released at " + v.rel(g.Released)
		}
		holds := " " + g.Key + ","
		switch {
		case g.Limit > 0:
			holds = fmt.Sprintf(" %s of %d permits,", g.Key, g.Limit)
		case g.Shared:
			holds = fmt.Sprintf(" %s shared,", g.Key)
		}
		tip := fmt.Sprintf("%s:%s fence %d, granted at %s (attempt began %s), valid until %s, %s",
			g.Worker, holds, g.Fence, v.rel(g.Granted), v.rel(g.Invoke), v.rel(g.Deadline), released)
		fmt.Fprintf(&v.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`,
			x1, top+2, math.Max(x2-x1, 1), workerRow-4, color, html.EscapeString(tip))
		if g.Released > g.Deadline {
			// The holder went on past its validity without knowing it (it
			// was paused): drawn hollow.
			x3 := v.x(g.Released)
			fmt.Fprintf(&v.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="%s" stroke-dasharray="2,2"><title>%s</title></rect>`,
				x2, top+4, math.Max(x3-x2, 1), workerRow-8, color, html.EscapeString(g.Worker+": still acting after its validity ended, until "+v.rel(g.Released)))
		}
	}
}

func (v *view) writes() {
	regTop := v.rows[history.ProcRegister]
	for _, ev := range v.o.Events {
		if ev.Process != history.ProcRegister || ev.Op != history.OpWrite || ev.Time < v.from || ev.Time > v.to {
			continue
		}
		top, ok := v.rows[ev.Worker]
		if !ok {
			continue
		}
		x := v.x(ev.Time)
		color, tip := "#222", fmt.Sprintf("%s wrote %d (version %d from version %d, fence %d) at %s", ev.Worker, ev.Value, ev.Version, ev.BasedOn, ev.Fence, v.rel(ev.Time))
		if ev.Type != history.OK {
			color, tip = refusedColor, fmt.Sprintf("%s's write refused at %s: %s", ev.Worker, v.rel(ev.Time), ev.Err)
		}
		fmt.Fprintf(&v.b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="1.2"><title>%s</title></line>`,
			x, x, top+workerRow-7, top+workerRow, color, html.EscapeString(tip))
		fmt.Fprintf(&v.b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-opacity="0.5"/>`,
			x, x, regTop+3, regTop+regRow-3, color)
	}
}

func (v *view) violations() {
	vs := append([]check.Violation(nil), v.o.Result.Violations...)
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].Start < vs[j].Start })
	for _, vi := range vs {
		if !v.visible(vi.Start, vi.End) {
			continue
		}
		tip := html.EscapeString(vi.Checker.String() + ": " + vi.Detail)
		x1, x2 := v.x(vi.Start), v.x(vi.End)
		switch vi.Checker {
		case check.Overlap, check.OverLimit:
			for _, w := range vi.Workers {
				if top, ok := v.rows[w]; ok {
					fmt.Fprintf(&v.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.75"><title>%s</title></rect>`,
						x1, top, math.Max(x2-x1, 2.5), workerRow, violationColor, tip)
				}
			}
			fmt.Fprintf(&v.b, `<path d="M%.1f %.0f l-4 -7 h8 z" fill="%s"><title>%s</title></path>`, x1, axisHeight-1, violationColor, tip)
		case check.Linearizable:
			top := v.rows["faults"]
			fmt.Fprintf(&v.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="3" fill="%s"><title>%s</title></rect>`,
				x1, top-3, math.Max(x2-x1, 2.5), violationColor, tip)
		case check.LostUpdate:
			cross(&v.b, x1, v.rows[history.ProcRegister]+regRow/2, 5, tip)
			if len(vi.Workers) > 0 {
				if top, ok := v.rows[vi.Workers[0]]; ok {
					cross(&v.b, x1, top+workerRow/2, 6, tip)
				}
			}
		case check.Liveness:
			for _, w := range vi.Workers {
				process, _, _ := strings.Cut(w, ".") // a goroutine's wait, on its worker's row
				if top, ok := v.rows[process]; ok {
					fmt.Fprintf(&v.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="%s" stroke-width="1.5"><title>%s</title></rect>`,
						x1, top+1, math.Max(x2-x1, 2.5), workerRow-2, violationColor, tip)
				}
			}
		case check.FenceOrder:
			if top, ok := v.rows[vi.Workers[len(vi.Workers)-1]]; ok {
				fmt.Fprintf(&v.b, `<path d="M%.1f %.1f l5 5 l-5 5 l-5 -5 z" fill="%s" stroke="#fff"><title>%s</title></path>`,
					x1, top, violationColor, tip)
			}
		}
	}
}

// cross draws a red X centred on (x, y).
func cross(b *strings.Builder, x, y, r float64, tip string) {
	fmt.Fprintf(b, `<g stroke="%s" stroke-width="2.2"><title>%s</title><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/></g>`,
		violationColor, tip, x-r, y-r, x+r, y+r, x-r, y+r, x+r, y-r)
}

// workerIndex returns i for "worker-<i>" and for its goroutines,
// "worker-<i>.<g>", or 0.
func workerIndex(name string) int {
	worker, _, _ := strings.Cut(strings.TrimPrefix(name, "worker-"), ".")
	i, _ := strconv.Atoi(worker)
	return i
}
