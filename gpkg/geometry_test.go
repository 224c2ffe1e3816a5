package gpkg_test

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/gpkg"
	"github.com/twpayne/go-geom/encoding/wkt"
)

func uint64FromFloat(v float64) uint64 { return math.Float64bits(v) }

// wkbPoint is an NDR WKB point of the type code (1, 1001, …) and coords.
func wkbPoint(code uint32, coords ...float64) []byte {
	b := binary.LittleEndian.AppendUint32([]byte{1}, code)
	for _, c := range coords {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(c))
	}
	return b
}

func TestDecodeGeometry(t *testing.T) {
	nan := math.NaN()
	line := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32([]byte{1}, 2), 2)
	for _, v := range []float64{0, 0, 1, 1} {
		line = binary.LittleEndian.AppendUint64(line, math.Float64bits(v))
	}
	for _, c := range []struct {
		name string
		b    []byte
		want string // WKT, or the error's words
		ok   bool
	}{
		{"point", blob(0, nil, wkbPoint(1, 1, 2)), "POINT (1 2)", true},
		{"xy envelope", blob(2, []float64{1, 1, 2, 2}, wkbPoint(1, 1, 2)), "POINT (1 2)", true},
		{"xyz envelope", blob(4, []float64{1, 1, 2, 2, 3, 3}, wkbPoint(1001, 1, 2, 3)), "POINT Z (1 2 3)", true},
		{"xyzm envelope", blob(8, []float64{1, 1, 2, 2, 3, 3, 4, 4}, wkbPoint(3001, 1, 2, 3, 4)), "POINT ZM (1 2 3 4)", true},
		{"empty point", blob(0x10, nil, wkbPoint(1, nan, nan)), "POINT EMPTY", true},
		{"linestring", blob(0, nil, line), "LINESTRING (0 0, 1 1)", true},
		{"big-endian header", append([]byte{'G', 'P', 0, 0, 0, 0, 0x10, 0xE6}, wkbPoint(1, 1, 2)...), "POINT (1 2)", true},
		{"short", []byte("GP\x00"), "shorter than its 8-byte header", false},
		{"magic", append([]byte("XX\x00\x01\xe6\x10\x00\x00"), wkbPoint(1, 1, 2)...), "GeoPackage magic", false},
		{"version", append([]byte("GP\x01\x01\xe6\x10\x00\x00"), wkbPoint(1, 1, 2)...), "version 1", false},
		{"envelope indicator 5", blob(10, nil, wkbPoint(1, 1, 2)), "envelope indicator 5", false},
		{"envelope past the end", blob(8, []float64{1, 2}, nil), "declares a 64-byte envelope but 16 bytes follow it", false},
		{"extended", blob(0x20, nil, wkbPoint(1, 1, 2)), "extended geometry type", false},
		{"empty flag with coordinates", blob(0x10, nil, wkbPoint(1, 1, 2)), "flags an empty geometry but its WKB Point has 1 coordinates", false},
		{"trailing bytes", blob(0, nil, append(wkbPoint(1, 1, 2), 0)), "1 bytes after its WKB geometry", false},
		{"lying count", blob(0, nil, binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32([]byte{1}, 2), math.MaxUint32)), "needs more than the 0 bytes left", false},
		{"curve", blob(0, nil, binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32([]byte{1}, 8), 0)), "curve geometry type 8", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, _, err := gpkg.DecodeGeometry(c.b)
			if !c.ok {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("got %v; want an error with %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s, _ := wkt.Marshal(g); s != c.want {
				t.Errorf("got %s, want %s", s, c.want)
			}
		})
	}
}

// FuzzDecodeGeometry: no blob makes the decoder panic, or allocate past
// its size (the WKB walk), and a decoded geometry is one go-geom can use.
func FuzzDecodeGeometry(f *testing.F) {
	f.Add(blob(0, nil, wkbPoint(1, 1, 2)))
	f.Add(blob(4, []float64{1, 1, 2, 2, 3, 3}, wkbPoint(1001, 1, 2, 3)))
	f.Add(blob(0x10, nil, wkbPoint(1, math.NaN(), math.NaN())))
	f.Add(blob(0, nil, binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32([]byte{1}, 7), 2)))
	f.Add(blob(0, nil, binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32([]byte{1}, 6), 1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, _, err := gpkg.DecodeGeometry(b)
		if err != nil {
			return
		}
		if g == nil {
			t.Fatal("no geometry and no error")
		}
		_ = g.Bounds()
		if n := gpkg.Coordinates(g); n*g.Stride()*8 > len(b) {
			t.Fatalf("%d coordinates from %d bytes", n, len(b))
		}
	})
}
