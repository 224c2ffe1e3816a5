package statuspage

import (
	"html/template"
	"strconv"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/ingestd/ingestd/internal/errtext"
)

// shortError is how many characters of an error the overview shows; the
// whole text is in the cell's title and on the feed's page.
const shortError = 90

var funcs = template.FuncMap{
	"feedLink": feedLink,
	"short":    short,
	"seconds":  seconds,
	"when":     when,
	"whenp":    func(t *time.Time) string { return whenPtr(t) },
	"num":      num,
	"int":      func(n int64) string { return humanize.Comma(n) },
	"float":    func(f float64) string { return strconv.FormatFloat(f, 'g', 4, 64) },
	"rect": func(b BBox) map[string]string {
		x, y, w, h := b.Rect()
		return map[string]string{"x": x, "y": y, "w": w, "h": h}
	},
	"chartW": func() int { return chartWidth },
	"chartH": func() int { return chartHeight },
}

// short cuts s to shortError characters, keeping its first clause and its
// root cause (errtext.Short).
func short(s string) string { return errtext.Short(s, shortError) }

// seconds formats a duration in seconds for reading ("3m20s", "2h0m"),
// "—" for none.
func seconds(s *float64) string {
	if s == nil {
		return "—"
	}
	d := time.Duration(*s * float64(time.Second))
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return d.Round(time.Minute).String()
	default:
		return strconv.Itoa(int(d.Hours()/24)) + "d" + strconv.Itoa(int(d.Hours())%24) + "h"
	}
}

// when formats a time in UTC to the second.
func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func whenPtr(t *time.Time) string {
	if t == nil {
		return "—"
	}
	return when(*t)
}

// num formats a nullable count, "—" for NULL.
func num(n *int64) string {
	if n == nil {
		return "—"
	}
	return humanize.Comma(*n)
}
