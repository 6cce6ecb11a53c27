package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Chart geometry, in SVG user units.
const (
	chartWidth   = 980
	chartHeight  = 460
	marginLeft   = 70
	marginRight  = 20
	marginTop    = 70
	marginBottom = 60
	groupFill    = 0.84 // share of a case's width taken by its bars
	// minCaseWidth is the least width of a case's group of bars: the chart
	// widens beyond chartWidth when the cases are many.
	minCaseWidth = 84
)

// palette colours the libraries in order: this project's first (blues),
// then the peers.
var palette = []string{"#1f5fbf", "#5fa8f0", "#d8473b", "#f0a030", "#52a352", "#8c6bb1", "#7f7f7f"}

// barChart is the geometry of the bar chart of one report: its width, the
// plot's size, and the logarithmic rate axis from yLo to yHi.
type barChart struct {
	width        int
	plotW, plotH float64
	yLo, yHi     float64
}

// WriteSVG draws a grouped bar chart of the rate per case and library on a
// logarithmic axis.
func (r *Report) WriteSVG(w io.Writer) error {
	yLo, yHi := r.rateAxis()
	width := max(chartWidth, marginLeft+marginRight+minCaseWidth*len(r.Cases))
	ch := barChart{
		width: width,
		plotW: float64(width - marginLeft - marginRight),
		plotH: float64(chartHeight - marginTop - marginBottom),
		yLo:   yLo,
		yHi:   yHi,
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		width, chartHeight, width, chartHeight)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="15" font-weight="bold">Cycles per second (handoffs or grants per second on one shared name), log scale — higher is better</text>`+"\n", marginLeft)
	writeBarLegend(&b, r.Libraries)
	ch.writeGrid(&b)
	ch.writeBars(&b, r)
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%.1f" stroke="#333"/>`+"\n", marginLeft, marginLeft, marginTop, marginTop+ch.plotH)
	fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#333"/>`+"\n", marginLeft, marginLeft+ch.plotW, marginTop+ch.plotH, marginTop+ch.plotH)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// rateAxis returns the bounds of the rate axis: the powers of ten just
// under the lowest rate and just over the highest, a decade apart at
// least; 1 to 10 if no row has a rate.
func (r *Report) rateAxis() (yLo, yHi float64) {
	lo, hi := math.Inf(1), 0.0
	for _, row := range r.Rows {
		if row.NA == "" && row.Rate > 0 {
			lo, hi = math.Min(lo, row.Rate), math.Max(hi, row.Rate)
		}
	}
	if hi == 0 {
		lo, hi = 1, 10
	}
	yLo = math.Pow(10, math.Floor(math.Log10(lo)))
	yHi = math.Pow(10, math.Ceil(math.Log10(hi)))
	if yHi <= yLo {
		yHi = yLo * 10
	}
	return yLo, yHi
}

// y maps the rate v to its height in the chart.
func (ch barChart) y(v float64) float64 {
	f := (math.Log10(v) - math.Log10(ch.yLo)) / (math.Log10(ch.yHi) - math.Log10(ch.yLo))
	return marginTop + ch.plotH*(1-f)
}

// writeBarLegend writes a swatch and name per library, in a row under the
// title.
func writeBarLegend(b *strings.Builder, libraries []Library) {
	lx := float64(marginLeft)
	for i, l := range libraries {
		fmt.Fprintf(b, `<rect x="%.1f" y="34" width="12" height="12" fill="%s"/><text x="%.1f" y="45">%s</text>`+"\n",
			lx, palette[i%len(palette)], lx+16, html.EscapeString(l.Name))
		lx += 16 + 7.5*float64(len(l.Name)) + 22
	}
}

// writeGrid writes the grid: decades with labels, 2x and 5x as faint lines.
func (ch barChart) writeGrid(b *strings.Builder) {
	for d := ch.yLo; d <= ch.yHi*1.0001; d *= 10 {
		fmt.Fprintf(b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#bbb"/>`+"\n", marginLeft, marginLeft+ch.plotW, ch.y(d), ch.y(d))
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", marginLeft-6, ch.y(d), short(d))
		for _, m := range []float64{2, 5} {
			if v := d * m; v < ch.yHi {
				fmt.Fprintf(b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", marginLeft, marginLeft+ch.plotW, ch.y(v), ch.y(v))
			}
		}
	}
}

// writeBars writes a group of bars per case of r, a bar per library, with
// the case's label under the group.
func (ch barChart) writeBars(b *strings.Builder, r *Report) {
	gw := ch.plotW / float64(max(len(r.Cases), 1))
	bw := gw * groupFill / float64(max(len(r.Libraries), 1))
	for ci, c := range r.Cases {
		gx := marginLeft + gw*float64(ci) + gw*(1-groupFill)/2
		for li, l := range r.Libraries {
			if row, ok := r.Lookup(c.ID, l.Name); ok {
				ch.writeBar(b, gx+bw*float64(li), bw, palette[li%len(palette)], c, l, row)
			}
		}
		for i, line := range strings.Split(c.Short, "\n") {
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n",
				marginLeft+gw*(float64(ci)+0.5), marginTop+ch.plotH+18+15*float64(i), html.EscapeString(line))
		}
	}
}

// writeBar writes the bar of row, of library l in case c, at x with width
// bw, labelled with its rate; a row not run or without a rate gets a label
// saying so instead.
func (ch barChart) writeBar(b *strings.Builder, x, bw float64, color string, c Case, l Library, row Row) {
	if row.NA != "" || row.Rate <= 0 {
		label := "n/a"
		if row.NA == "" {
			label = "0"
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="9" fill="#888" transform="rotate(-90 %.1f %.1f)">%s</text>`+"\n",
			x+bw/2+3, marginTop+ch.plotH-4, x+bw/2+3, marginTop+ch.plotH-4, label)
		return
	}
	top := ch.y(math.Max(row.Rate, ch.yLo))
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s, %s: %s/s</title></rect>`+"\n",
		x, top, bw-1, marginTop+ch.plotH-top, color, html.EscapeString(l.Name), html.EscapeString(c.Title), Num(row.Rate))
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="9" transform="rotate(-90 %.1f %.1f)">%s</text>`+"\n",
		x+bw/2+3, top-3, x+bw/2+3, top-3, short(row.Rate))
}

// short formats v as 950, 9.5k, 95k, 1.2M.
func short(v float64) string {
	switch {
	case v >= 1e6:
		return trim(fmt.Sprintf("%.1f", v/1e6)) + "M"
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 1e3:
		return trim(fmt.Sprintf("%.1f", v/1e3)) + "k"
	}
	return fmt.Sprintf("%.0f", v)
}

func trim(s string) string { return strings.TrimSuffix(s, ".0") }
