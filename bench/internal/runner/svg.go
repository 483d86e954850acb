package runner

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
)

// series is one line of a plot.
type series struct {
	Name string
	X, Y []float64
}

// plot is a simple line plot rendered as standalone SVG, with linear or
// logarithmic (base 10) axes and a legend on the right.
type plot struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
	Series                []series
}

// palette holds distinguishable line colours (Okabe–Ito).
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"}

// dashes gives each series its own dash pattern, so that lines lying on
// top of each other stay visible.
var dashes = []string{"", "9 4", "2 3", "12 3 2 3", "5 5", "1 5", "14 6"}

const (
	svgW, svgH                   = 800, 440
	marginL, marginR             = 72, 200
	marginT, marginB             = 44, 56
	plotW                        = svgW - marginL - marginR
	plotH                        = svgH - marginT - marginB
	markerLimit                  = 24 // draw point markers when a series has at most this many points
	fontFamily                   = "Helvetica, Arial, sans-serif"
	axisColor, gridColor, txtCol = "#333", "#e5e5e5", "#222"
)

// axis maps data values to pixels.
type axis struct {
	log      bool
	lo, hi   float64 // in data units (log10 units when log)
	ticks    []float64
	pxLo, px float64 // pixel origin and extent (extent may be negative)
}

func (a axis) pos(v float64) float64 {
	if a.log {
		v = math.Log10(math.Max(v, 1e-300))
	}
	if a.hi == a.lo {
		return a.pxLo
	}
	return a.pxLo + (v-a.lo)/(a.hi-a.lo)*a.px
}

func newAxis(vals []float64, log, fromZero bool, pxLo, px float64) axis {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if log && v <= 0 {
			continue
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1, 10
	}
	a := axis{log: log, pxLo: pxLo, px: px}
	if log {
		a.lo, a.hi = math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
		if a.hi == a.lo {
			a.hi++
		}
		for e := a.lo; e <= a.hi+1e-9; e++ {
			a.ticks = append(a.ticks, math.Pow(10, e))
		}
		return a
	}
	if fromZero && lo > 0 {
		lo = 0
	}
	if hi == lo {
		hi = lo + 1
	}
	step := niceStep((hi - lo) / 6)
	a.lo, a.hi = math.Floor(lo/step)*step, math.Ceil(hi/step)*step
	for v := a.lo; v <= a.hi+step/2; v += step {
		a.ticks = append(a.ticks, v)
	}
	return a
}

// niceStep rounds a raw tick step up to 1, 2 or 5 × 10^k.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// tickLabel renders a tick value compactly: 1500 → "1.5k", 100000 → "100k".
func tickLabel(v float64) string {
	av := math.Abs(v)
	switch {
	case av >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case av >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	case av == 0:
		return "0"
	case av < 1:
		return strconv.FormatFloat(v, 'g', 3, 64)
	default:
		return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
	}
}

func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// svg renders the plot.
func (p plot) svg() []byte {
	var xs, ys []float64
	for _, s := range p.Series {
		xs = append(xs, s.X...)
		ys = append(ys, s.Y...)
	}
	ax := newAxis(xs, p.LogX, false, marginL, plotW)
	ay := newAxis(ys, p.LogY, true, marginT+plotH, -plotH)

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="%s" font-size="12">`+"\n",
		svgW, svgH, svgW, svgH, fontFamily)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", svgW, svgH)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="15" font-weight="bold" fill="%s">%s</text>`+"\n", marginL, txtCol, esc(p.Title))

	// Grid and tick labels.
	for _, t := range ax.ticks {
		x := ax.pos(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x, marginT, x, marginT+plotH, gridColor)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="%s">%s</text>`+"\n", x, marginT+plotH+18, txtCol, esc(tickLabel(t)))
	}
	for _, t := range ay.ticks {
		y := ay.pos(t)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", marginL, y, marginL+plotW, y, gridColor)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="%s">%s</text>`+"\n", marginL-6, y+4, txtCol, esc(tickLabel(t)))
	}
	// Axes.
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>`+"\n", marginL, marginT+plotH, marginL+plotW, marginT+plotH, axisColor)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>`+"\n", marginL, marginT, marginL, marginT+plotH, axisColor)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="%s">%s</text>`+"\n", marginL+plotW/2, svgH-14, txtCol, esc(p.XLabel))
	fmt.Fprintf(&b, `<text x="16" y="%d" text-anchor="middle" fill="%s" transform="rotate(-90 16 %d)">%s</text>`+"\n",
		marginT+plotH/2, txtCol, marginT+plotH/2, esc(p.YLabel))

	// Series and legend.
	for i, s := range p.Series {
		col := palette[i%len(palette)]
		var pts bytes.Buffer
		n := 0
		for j := range s.X {
			if j >= len(s.Y) || (p.LogX && s.X[j] <= 0) || (p.LogY && s.Y[j] <= 0) {
				continue
			}
			fmt.Fprintf(&pts, "%.1f,%.1f ", ax.pos(s.X[j]), ay.pos(s.Y[j]))
			n++
		}
		if n > 0 {
			dash := ""
			if d := dashes[i%len(dashes)]; d != "" {
				dash = ` stroke-dasharray="` + d + `"`
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.8" stroke-linejoin="round"%s points="%s"/>`+"\n", col, dash, bytes.TrimSpace(pts.Bytes()))
		}
		if n <= markerLimit {
			for j := range s.X {
				if j >= len(s.Y) || (p.LogX && s.X[j] <= 0) || (p.LogY && s.Y[j] <= 0) {
					continue
				}
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", ax.pos(s.X[j]), ay.pos(s.Y[j]), col)
			}
		}
		ly := marginT + 10 + i*20
		lx := marginL + plotW + 16
		legendDash := ""
		if d := dashes[i%len(dashes)]; d != "" {
			legendDash = ` stroke-dasharray="` + d + `"`
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"%s/>`+"\n", lx, ly, lx+22, ly, col, legendDash)
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">%s</text>`+"\n", lx+28, ly+4, txtCol, esc(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}
