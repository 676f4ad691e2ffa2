package bench

import (
	"image/color"
	"os"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// palette colours targets in a fixed order.
var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
	color.RGBA{0xe3, 0x77, 0xc2, 0xff}, color.RGBA{0x7f, 0x7f, 0x7f, 0xff},
}

// Chart writes a PNG with two panels: median MB/s per throughput workload
// (bars per target) and median latency (p50, p99) of the latency and e2e
// workloads per target.
func (c *Comparison) Chart(path string) error {
	var thr, lat []string
	for _, w := range c.Workloads {
		switch w.Kind {
		case "produce", "consume", "perf-produce", "perf-consume":
			thr = append(thr, w.Name)
		case "latency", "e2e":
			lat = append(lat, w.Name)
		}
	}
	plots := [][]*plot.Plot{nil}
	if len(thr) > 0 {
		p1, err := c.throughputPlot(thr)
		if err != nil {
			return err
		}
		plots[0] = append(plots[0], p1)
	}
	if len(lat) > 0 {
		p2, err := c.latencyPlot(lat)
		if err != nil {
			return err
		}
		plots[0] = append(plots[0], p2)
	}
	if len(plots[0]) == 0 {
		return nil // nothing to draw
	}
	width := vg.Length(6.5*float64(len(plots[0]))) * vg.Inch
	img := vgimg.New(width, 4.5*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots[0]), PadX: vg.Inch / 3, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8,
		PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	for j, p := range plots[0] {
		p.Draw(tiles.At(dc, j, 0))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (c *Comparison) throughputPlot(workloads []string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Throughput (median MB/s of record values)"
	p.Y.Label.Text = "MB/s"
	p.Legend.Top = true
	bw := vg.Points(60 / float64(max(len(c.Targets), 1)))
	top := 0.0
	for i, t := range c.Targets {
		vals := make(plotter.Values, len(workloads))
		for j, w := range workloads {
			if r := c.row(w, t); r != nil {
				vals[j] = r.MBPerSec
				top = max(top, r.MBPerSec)
			}
		}
		bars, err := plotter.NewBarChart(vals, bw)
		if err != nil {
			return nil, err
		}
		bars.Color = palette[i%len(palette)]
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(float64(i)-float64(len(c.Targets)-1)/2) * bw
		p.Add(bars)
		p.Legend.Add(t, bars)
	}
	p.NominalX(workloads...)
	p.Y.Min, p.Y.Max = 0, top*1.45 // headroom for the legend
	return p, nil
}

func (c *Comparison) latencyPlot(workloads []string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Latency at a fixed rate (linger 0): produce ack, e2e receipt"
	p.Y.Label.Text = "ms (median over runs, log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	var names []string
	for _, w := range workloads {
		at := ""
		if rate := c.Rates[w]; rate > 0 {
			at = "@" + human(rate) + "/s"
		}
		if strings.HasPrefix(w, "e2e") {
			at = "e2e " + at
		}
		names = append(names, "p50\n"+at, "p99\n"+at)
	}
	bw := vg.Points(60 / float64(max(len(c.Targets), 1)))
	const floor = 0.01 // ms; a log axis cannot show 0
	top := 1.0
	for i, t := range c.Targets {
		vals := make(plotter.Values, len(names))
		for k := range vals {
			vals[k] = floor
		}
		for j, w := range workloads {
			if r := c.row(w, t); r != nil && r.Latency != nil {
				vals[2*j], vals[2*j+1] = max(r.Latency.P50, floor), max(r.Latency.P99, floor)
				top = max(top, vals[2*j+1])
			}
		}
		// Bars start at the floor, not at 0 (log 0 is not drawable): each
		// stands on an undrawn base bar of the floor's height.
		baseVals := make(plotter.Values, len(names))
		for k := range baseVals {
			baseVals[k] = floor
			vals[k] -= floor
		}
		base, err := plotter.NewBarChart(baseVals, bw)
		if err != nil {
			return nil, err
		}
		base.Offset = vg.Length(float64(i)-float64(len(c.Targets)-1)/2) * bw
		bars, err := plotter.NewBarChart(vals, bw)
		if err != nil {
			return nil, err
		}
		bars.StackOn(base)
		bars.Color = palette[i%len(palette)]
		bars.LineStyle.Width = 0
		p.Add(bars)
		p.Legend.Add(t, bars)
	}
	p.NominalX(names...)
	p.Y.Min, p.Y.Max = floor, top*30 // headroom (on a log axis) for the legend
	return p, nil
}
