package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Line chart geometry, in SVG user units: two panels side by side.
const (
	lineChartWidth  = 1000
	lineChartHeight = 440
	panelTop        = 80
	panelBottom     = 56
	panelLeft       = 64
	panelGap        = 70
	panelRight      = 20
)

// panel is one plot: a title, axes' labels, and one line per library.
type panel struct {
	title, xLabel, yLabel string
	xs                    []float64 // the x values, each labelled on the axis
	lines                 []line
}

// line is one library's points; a missing point is NaN.
type line struct {
	name, color string
	ys          []float64
}

// WriteSeriesSVG draws the series with id as two line charts, time per
// cycle and CPU per cycle against the series' x, both axes logarithmic, a
// line per library that ran at any of its points.
func (r *Report) WriteSeriesSVG(w io.Writer, id string) error {
	var s Series
	for _, v := range r.Series {
		if v.ID == id {
			s = v
		}
	}
	if len(s.Points) == 0 {
		return fmt.Errorf("report: no series %q", id)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		lineChartWidth, lineChartHeight, lineChartWidth, lineChartHeight)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="15" font-weight="bold">%s — lower is better, both axes log scale</text>`+"\n",
		panelLeft, html.EscapeString(s.Title))
	panels := []panel{r.seriesPanel(s, TimeMetric), r.seriesPanel(s, CPUMetric)}
	writeLegend(&b, panels[0].lines)
	pw := float64(lineChartWidth-panelLeft-panelGap-panelRight) / 2
	for i, p := range panels {
		p.draw(&b, panelLeft+float64(i)*(pw+panelGap), pw)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// seriesPanel collects metric m of every library at every point of s.
func (r *Report) seriesPanel(s Series, m Metric) panel {
	p := panel{title: strings.ToUpper(m.Name[:1]) + m.Name[1:], xLabel: s.XLabel, yLabel: m.Unit}
	for _, pt := range s.Points {
		p.xs = append(p.xs, pt.X)
	}
	for i, l := range r.Libraries {
		ln := line{name: l.Name, color: palette[i%len(palette)]}
		ran := false
		for _, pt := range s.Points {
			v := math.NaN()
			if row, ok := r.Row(pt.Case, l.Name); ok && row.Cycles > 0 && m.Get(row) > 0 {
				v, ran = m.Get(row), true
			}
			ln.ys = append(ln.ys, v)
		}
		if ran {
			p.lines = append(p.lines, ln)
		}
	}
	return p
}

// writeLegend writes a swatch and name per line, in a row under the title.
func writeLegend(b *strings.Builder, lines []line) {
	x := float64(panelLeft)
	for _, l := range lines {
		fmt.Fprintf(b, `<rect x="%.1f" y="36" width="12" height="12" fill="%s"/><text x="%.1f" y="47">%s</text>`+"\n",
			x, l.color, x+16, html.EscapeString(l.name))
		x += 16 + 7.5*float64(len(l.name)) + 22
	}
}

// draw writes the panel with its left edge at left and plot width width.
func (p panel) draw(b *strings.Builder, left, width float64) {
	height := float64(lineChartHeight - panelTop - panelBottom)
	xAt, yAt, ticks := p.scales(left, width, height)
	fmt.Fprintf(b, `<text x="%.1f" y="%d" font-weight="bold">%s (%s)</text>`+"\n", left, panelTop-12, html.EscapeString(p.title), p.yLabel)
	writeYGrid(b, left, width, yAt, ticks)
	for _, x := range p.xs {
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%.1f" stroke="#eee"/>`+"\n", xAt(x), xAt(x), panelTop, panelTop+height)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%g</text>`+"\n", xAt(x), panelTop+height+16, x)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", left+width/2, panelTop+height+36, html.EscapeString(p.xLabel))
	fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%.1f" stroke="#333"/>`+"\n", left, left, panelTop, panelTop+height)
	fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#333"/>`+"\n", left, left+width, panelTop+height, panelTop+height)
	for _, l := range p.lines {
		var pts []string
		for i, y := range l.ys {
			if math.IsNaN(y) {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xAt(p.xs[i]), yAt(y)))
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s, %s %g: %s %s</title></circle>`+"\n",
				xAt(p.xs[i]), yAt(y), l.color, html.EscapeString(l.name), html.EscapeString(p.xLabel), p.xs[i], Num(y), p.yLabel)
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), l.color)
	}
}

// writeYGrid writes a line at each of ticks, labelled; decades stronger.
func writeYGrid(b *strings.Builder, left, width float64, yAt func(float64) float64, ticks []float64) {
	for _, v := range ticks {
		stroke, size, fill := "#ccc", 12, "#000"
		if m := v / math.Pow(10, math.Floor(math.Log10(v)+1e-9)); math.Abs(m-1) > 1e-6 {
			stroke, size, fill = "#eee", 9, "#666"
		}
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/>`+"\n", left, left+width, yAt(v), yAt(v), stroke)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end" dominant-baseline="middle" font-size="%d" fill="%s">%s</text>`+"\n",
			left-6, yAt(v), size, fill, short(v))
	}
}

// niceTicks returns the values 1, 2 and 5 times a power of ten from the
// largest such value at most lo to the smallest at least hi.
func niceTicks(lo, hi float64) []float64 {
	var all []float64
	for d := math.Pow(10, math.Floor(math.Log10(lo))); d <= hi*10; d *= 10 {
		all = append(all, d, 2*d, 5*d)
	}
	first := 0
	for first+1 < len(all) && all[first+1] <= lo {
		first++
	}
	last := len(all) - 1
	for last > first && all[last-1] >= hi {
		last--
	}
	return all[first : last+1]
}

// scales maps x and y values to the panel's coordinates, logarithmically,
// and returns the ticks of the y axis: 1, 2 and 5 times powers of ten, from
// just under the smallest value to just over the largest.
func (p panel) scales(left, width, height float64) (xAt, yAt func(float64) float64, ticks []float64) {
	lo, hi := math.Inf(1), 0.0
	for _, l := range p.lines {
		for _, y := range l.ys {
			if !math.IsNaN(y) {
				lo, hi = math.Min(lo, y), math.Max(hi, y)
			}
		}
	}
	if hi == 0 {
		lo, hi = 1, 10
	}
	ticks = niceTicks(lo, hi)
	yLo, yHi := ticks[0], math.Max(ticks[len(ticks)-1], ticks[0]*2)
	xLo, xHi := math.Log(p.xs[0]), math.Log(p.xs[len(p.xs)-1])
	pad := 0.04 * width
	xAt = func(x float64) float64 {
		if xHi == xLo {
			return left + width/2
		}
		return left + pad + (width-2*pad)*(math.Log(x)-xLo)/(xHi-xLo)
	}
	yAt = func(y float64) float64 {
		f := (math.Log10(y) - math.Log10(yLo)) / (math.Log10(yHi) - math.Log10(yLo))
		return panelTop + height*(1-f)
	}
	return xAt, yAt, ticks
}
