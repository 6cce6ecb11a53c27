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

// WriteSVG draws a grouped bar chart of the rate per case and library on a
// logarithmic axis.
func (r *Report) WriteSVG(w io.Writer) error {
	lo, hi := math.Inf(1), 0.0
	for _, row := range r.Rows {
		if row.NA == "" && row.Rate > 0 {
			lo, hi = math.Min(lo, row.Rate), math.Max(hi, row.Rate)
		}
	}
	if hi == 0 {
		lo, hi = 1, 10
	}
	yLo := math.Pow(10, math.Floor(math.Log10(lo)))
	yHi := math.Pow(10, math.Ceil(math.Log10(hi)))
	if yHi <= yLo {
		yHi = yLo * 10
	}
	width := max(chartWidth, marginLeft+marginRight+minCaseWidth*len(r.Cases))
	plotW := float64(width - marginLeft - marginRight)
	plotH := float64(chartHeight - marginTop - marginBottom)
	y := func(v float64) float64 {
		f := (math.Log10(v) - math.Log10(yLo)) / (math.Log10(yHi) - math.Log10(yLo))
		return marginTop + plotH*(1-f)
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		width, chartHeight, width, chartHeight)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="15" font-weight="bold">Cycles per second (handoffs or grants per second on one shared name), log scale — higher is better</text>`+"\n", marginLeft)

	// Legend.
	lx := float64(marginLeft)
	for i, l := range r.Libraries {
		fmt.Fprintf(&b, `<rect x="%.1f" y="34" width="12" height="12" fill="%s"/><text x="%.1f" y="45">%s</text>`+"\n",
			lx, palette[i%len(palette)], lx+16, html.EscapeString(l.Name))
		lx += 16 + 7.5*float64(len(l.Name)) + 22
	}

	// Grid: decades with labels, 2x and 5x as faint lines.
	for d := yLo; d <= yHi*1.0001; d *= 10 {
		fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#bbb"/>`+"\n", marginLeft, marginLeft+plotW, y(d), y(d))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", marginLeft-6, y(d), short(d))
		for _, m := range []float64{2, 5} {
			if v := d * m; v < yHi {
				fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", marginLeft, marginLeft+plotW, y(v), y(v))
			}
		}
	}

	// Bars.
	gw := plotW / float64(max(len(r.Cases), 1))
	bw := gw * groupFill / float64(max(len(r.Libraries), 1))
	for ci, c := range r.Cases {
		gx := marginLeft + gw*float64(ci) + gw*(1-groupFill)/2
		for li, l := range r.Libraries {
			x := gx + bw*float64(li)
			row, ok := r.Lookup(c.ID, l.Name)
			switch {
			case !ok:
				continue
			case row.NA != "" || row.Rate <= 0:
				label := "n/a"
				if row.NA == "" {
					label = "0"
				}
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="9" fill="#888" transform="rotate(-90 %.1f %.1f)">%s</text>`+"\n",
					x+bw/2+3, marginTop+plotH-4, x+bw/2+3, marginTop+plotH-4, label)
				continue
			}
			top := y(math.Max(row.Rate, yLo))
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s, %s: %s/s</title></rect>`+"\n",
				x, top, bw-1, marginTop+plotH-top, palette[li%len(palette)], html.EscapeString(l.Name), html.EscapeString(c.Title), Num(row.Rate))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="9" transform="rotate(-90 %.1f %.1f)">%s</text>`+"\n",
				x+bw/2+3, top-3, x+bw/2+3, top-3, short(row.Rate))
		}
		for i, line := range strings.Split(c.Short, "\n") {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n",
				marginLeft+gw*(float64(ci)+0.5), marginTop+plotH+18+15*float64(i), html.EscapeString(line))
		}
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%.1f" stroke="#333"/>`+"\n", marginLeft, marginLeft, marginTop, marginTop+plotH)
	fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#333"/>`+"\n", marginLeft, marginLeft+plotW, marginTop+plotH, marginTop+plotH)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
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
