package statuspage

import (
	"strconv"
	"strings"
)

// Chart is a small line chart of one series, drawn as an inline SVG
// polyline in a chartWidth × chartHeight box.
type Chart struct {
	// Points is the polyline's points attribute ("x,y x,y …"), empty when
	// there is nothing to draw.
	Points string
	// Max and Last are the series' largest and newest values.
	Max, Last float64
	// N is the number of values drawn.
	N int
}

const chartWidth, chartHeight = 300, 60

// lineChart scales vals (oldest first) into a Chart: x spread evenly, y from
// 0 at the bottom to the largest value at the top.
func lineChart(vals []float64) Chart {
	c := Chart{N: len(vals)}
	if len(vals) == 0 {
		return c
	}
	for _, v := range vals {
		c.Max = max(c.Max, v)
	}
	c.Last = vals[len(vals)-1]
	var b strings.Builder
	for i, v := range vals {
		x := float64(chartWidth) / 2
		if len(vals) > 1 {
			x = float64(i) * chartWidth / float64(len(vals)-1)
		}
		y := float64(chartHeight)
		if c.Max > 0 {
			y = chartHeight - v/c.Max*(chartHeight-2) - 1
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatFloat(x, 'f', 1, 64) + "," + strconv.FormatFloat(y, 'f', 1, 64))
	}
	c.Points = b.String()
	return c
}

// pollCharts draws the durations of finished polls and the feature counts
// of polls that have one, oldest first, from polls newest first.
func pollCharts(polls []Poll) (duration, features Chart) {
	var d, f []float64
	for i := len(polls) - 1; i >= 0; i-- {
		p := polls[i]
		if p.DurationSeconds != nil {
			d = append(d, *p.DurationSeconds)
		}
		if p.Features != nil {
			f = append(f, float64(*p.Features))
		}
	}
	return lineChart(d), lineChart(f)
}
