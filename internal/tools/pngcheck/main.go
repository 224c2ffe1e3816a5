// Command pngcheck fails on a screenshot that shows nothing: a PNG that is
// (almost) one colour, or that lacks a colour the page draws only when its
// stylesheet loaded. scripts/screenshot.sh runs it on every screenshot.
//
//	pngcheck [-expect RRGGBB] [-min-share 0.002] FILE.png...
package main

import (
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"strconv"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pngcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	expect := fs.String("expect", "", "a colour (RRGGBB) that must cover at least -min-share of the image")
	minShare := fs.Float64("min-share", 0.002, "share of the pixels the -expect colour must cover")
	maxDominant := fs.Float64("max-dominant", 0.99, "largest share of the pixels one colour may cover")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "pngcheck: no file")
		return 2
	}
	var want *color.RGBA
	if *expect != "" {
		v, err := strconv.ParseUint(*expect, 16, 32)
		if err != nil || len(*expect) != 6 {
			fmt.Fprintf(stderr, "pngcheck: -expect %q: want RRGGBB\n", *expect)
			return 2
		}
		want = &color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 0xff}
	}
	code := 0
	for _, path := range fs.Args() {
		s, err := check(path, want, *minShare, *maxDominant)
		if err != nil {
			fmt.Fprintf(stderr, "pngcheck: %s: %v\n", path, err)
			code = 1
			continue
		}
		fmt.Fprintf(stdout, "pngcheck: %s: %s\n", path, s)
	}
	return code
}

// stats describes an image's colours.
type stats struct {
	W, H     int
	Colours  int
	Dominant float64 // share of the most frequent colour
	Expected float64 // share of the expected colour
}

func (s stats) String() string {
	return fmt.Sprintf("%dx%d, %d colours, the commonest covers %.1f %%", s.W, s.H, s.Colours, 100*s.Dominant)
}

// check decodes the PNG at path and judges it.
func check(path string, want *color.RGBA, minShare, maxDominant float64) (stats, error) {
	f, err := os.Open(path)
	if err != nil {
		return stats{}, err
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return stats{}, err
	}
	s := measure(img, want)
	switch {
	case s.W*s.H == 0:
		return s, errors.New("an empty image")
	case s.Dominant > maxDominant:
		return s, fmt.Errorf("blank: %s", s)
	case want != nil && s.Expected < minShare:
		return s, fmt.Errorf("colour %02x%02x%02x covers %.2f %% (want %.2f %%; did the stylesheet load?): %s",
			want.R, want.G, want.B, 100*s.Expected, 100*minShare, s)
	}
	return s, nil
}

func measure(img image.Image, want *color.RGBA) stats {
	b := img.Bounds()
	s := stats{W: b.Dx(), H: b.Dy()}
	counts := map[color.RGBA]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			counts[c]++
		}
	}
	top := 0
	for _, n := range counts {
		top = max(top, n)
	}
	s.Colours = len(counts)
	if n := s.W * s.H; n > 0 {
		s.Dominant = float64(top) / float64(n)
		if want != nil {
			s.Expected = float64(counts[*want]) / float64(n)
		}
	}
	return s
}
