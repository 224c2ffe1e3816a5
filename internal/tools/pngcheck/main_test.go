package main

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writePNG(t *testing.T, paint func(x, y int) color.RGBA) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 200, 100))
	for y := range 100 {
		for x := range 200 {
			img.SetRGBA(x, y, paint(x, y))
		}
	}
	path := filepath.Join(t.TempDir(), "x.png")
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPNGCheck(t *testing.T) {
	white := color.RGBA{255, 255, 255, 255}
	header := color.RGBA{0x24, 0x29, 0x2e, 255}
	blank := writePNG(t, func(int, int) color.RGBA { return white })
	page := writePNG(t, func(x, y int) color.RGBA {
		if y < 10 {
			return header
		}
		if (x+y)%7 == 0 {
			return color.RGBA{0, 0, 0, 255}
		}
		return white
	})
	unstyled := writePNG(t, func(x, y int) color.RGBA {
		if (x+y)%7 == 0 {
			return color.RGBA{0, 0, 0, 255}
		}
		return white
	})
	for _, c := range []struct {
		args []string
		code int
		say  string
	}{
		{[]string{blank}, 1, "blank"},
		{[]string{page}, 0, "colours"},
		{[]string{"-expect", "24292e", page}, 0, "colours"},
		{[]string{"-expect", "24292e", unstyled}, 1, "stylesheet"},
		{[]string{"-expect", "nope", page}, 2, "RRGGBB"},
		{[]string{filepath.Join(t.TempDir(), "none.png")}, 1, "no such file"},
	} {
		var out, errb bytes.Buffer
		code := run(c.args, &out, &errb)
		if code != c.code || !strings.Contains(out.String()+errb.String(), c.say) {
			t.Errorf("pngcheck %v: exit %d, %q %q; want %d saying %q", c.args, code, out.String(), errb.String(), c.code, c.say)
		}
	}
}
