package main

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strings"
)

// A small SVG line chart: throughput and p99 latency against pipeline depth,
// one line per scenario, the depth axis in powers of two.

type point struct{ x, y float64 }

type series struct {
	label, color, dash string
	pts                []point
}

type panel struct {
	title  string
	yLabel string
	logY   bool // a log scale: equal ratios are equal distances
	yFmt   func(float64) string
	series []series
}

const (
	panelW, panelH         = 480, 330
	padL, padR, padT, padB = 72, 16, 36, 48
	legendH                = 26
	chartFont              = `font-family="sans-serif"`
)

var seriesStyle = map[string][2]string{ // color, dash
	"sluice-token":    {"#1f77b4", ""},
	"redis-lua-token": {"#d62728", ""},
	"redis-incr":      {"#ff7f0e", "6 4"},
	"sluice-ping":     {"#2ca02c", "2 3"},
}

// depthChart builds the two panels from the depth group of a report.
func (rep *report) depthChart() []panel {
	tput := panel{title: "Throughput (higher is better; log scale)", yLabel: "requests/s", yFmt: siFormat, logY: true}
	p99 := panel{title: "p99 latency (lower is better; log scale)", yLabel: "ms", logY: true,
		yFmt: func(v float64) string { return trimFloat(v) }}
	for _, name := range chartSet {
		st := seriesStyle[name]
		a := series{label: findScenario(name).label, color: st[0], dash: st[1]}
		b := a
		for _, r := range rep.results {
			if r.spec.group != groupDepth && r.spec.group != groupOwn || r.spec.sc.name != name || r.skipped != "" ||
				r.spec.procs != rep.base.procs || r.t.ok == 0 {
				continue
			}
			a.pts = append(a.pts, point{float64(r.spec.depth), r.opsPerSec()})
			b.pts = append(b.pts, point{float64(r.spec.depth), float64(r.quantile(99)) / 1e6})
		}
		if len(a.pts) > 0 {
			sort.Slice(a.pts, func(i, j int) bool { return a.pts[i].x < a.pts[j].x })
			sort.Slice(b.pts, func(i, j int) bool { return b.pts[i].x < b.pts[j].x })
			tput.series = append(tput.series, a)
			p99.series = append(p99.series, b)
		}
	}
	if len(tput.series) == 0 {
		return nil
	}
	return []panel{tput, p99}
}

// renderSVG draws panels side by side with a shared legend.
func renderSVG(title string, panels []panel) string {
	w, h := panelW*len(panels), panelH+legendH+24
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="18" text-anchor="middle" font-size="15" %s>%s</text>`+"\n", w/2, chartFont, html.EscapeString(title))
	for i, p := range panels {
		drawPanel(&b, p, float64(i*panelW), 24)
	}
	if len(panels) > 0 { // legend
		x := 20.0
		y := float64(h - 12)
		for _, s := range panels[0].series {
			fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="%s" stroke-width="2.5" stroke-dasharray="%s"/>`+"\n",
				x, y-4, x+28, y-4, s.color, s.dash)
			fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="12" %s>%s</text>`+"\n", x+34, y, chartFont, html.EscapeString(s.label))
			x += 34 + 7.5*float64(len(s.label)) + 24
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func drawPanel(b *strings.Builder, p panel, ox, oy float64) {
	x0, x1 := ox+padL, ox+panelW-padR
	y0, y1 := oy+panelH-padB, oy+padT // y0 is the bottom
	var xs []float64
	ymax, ymin := 0.0, math.Inf(1)
	seen := map[float64]bool{}
	for _, s := range p.series {
		for _, pt := range s.pts {
			if !seen[pt.x] {
				seen[pt.x] = true
				xs = append(xs, pt.x)
			}
			ymax = math.Max(ymax, pt.y)
			if pt.y > 0 {
				ymin = math.Min(ymin, pt.y)
			}
		}
	}
	sort.Float64s(xs)
	ymax = niceCeil(ymax)
	lx := func(v float64) float64 { return math.Log2(math.Max(v, 1)) }
	lo, hi := lx(xs[0]), lx(xs[len(xs)-1])
	if hi == lo {
		hi = lo + 1
	}
	px := func(v float64) float64 { return x0 + (lx(v)-lo)/(hi-lo)*(x1-x0) }
	py := func(v float64) float64 { return y0 - v/ymax*(y0-y1) }
	ticks := []float64{0, ymax / 5, 2 * ymax / 5, 3 * ymax / 5, 4 * ymax / 5, ymax}
	if p.logY && ymin < ymax {
		lo := math.Pow(10, math.Floor(math.Log10(ymin)))
		hi := math.Pow(10, math.Ceil(math.Log10(ymax)))
		py = func(v float64) float64 {
			return y0 - (math.Log10(math.Max(v, lo))-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*(y0-y1)
		}
		ticks = nil
		for d := lo; d <= hi*1.001; d *= 10 {
			ticks = append(ticks, d)
			if d < hi {
				ticks = append(ticks, 2*d, 5*d)
			}
		}
	}

	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" text-anchor="middle" font-size="13" %s>%s</text>`+"\n",
		(x0+x1)/2, oy+18, chartFont, html.EscapeString(p.title))
	for _, v := range ticks { // horizontal grid and y labels
		y := py(v)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x0, y, x1, y)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end" font-size="11" %s>%s</text>`+"\n",
			x0-6, y+4, chartFont, p.yFmt(v))
	}
	for _, v := range xs { // x ticks at the measured depths
		x := px(v)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", x, y0, x, y1)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="11" %s>%g</text>`+"\n", x, y0+16, chartFont, v)
	}
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`+"\n", x0, y0, x1, y0)
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`+"\n", x0, y0, x0, y1)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="12" %s>pipeline depth</text>`+"\n",
		(x0+x1)/2, y0+36, chartFont)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="12" transform="rotate(-90 %.1f %.1f)" %s>%s</text>`+"\n",
		ox+16, (y0+y1)/2, ox+16, (y0+y1)/2, chartFont, html.EscapeString(p.yLabel))
	for _, s := range p.series {
		var pts []string
		for _, pt := range s.pts {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(pt.x), py(pt.y)))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2.5" stroke-dasharray="%s" points="%s"/>`+"\n",
			s.color, s.dash, strings.Join(pts, " "))
		for _, pt := range s.pts {
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s P%g: %s</title></circle>`+"\n",
				px(pt.x), py(pt.y), s.color, html.EscapeString(s.label), pt.x, p.yFmt(pt.y))
		}
	}
}

// niceCeil rounds v up to 1, 2, 2.5, 4, 5, 6 or 8 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 4, 5, 6, 8, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// siFormat prints 1500000 as 1.5M.
func siFormat(v float64) string {
	switch {
	case v >= 1e6:
		return trimFloat(v/1e6) + "M"
	case v >= 1e3:
		return trimFloat(v/1e3) + "k"
	default:
		return trimFloat(v)
	}
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
