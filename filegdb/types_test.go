package filegdb

import (
	"encoding/binary"
	"math"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/ingestd/ingestd/feature"
)

// descriptorOf writes field descriptors (version 4, no geometry) for
// fields of the given names and types, each nullable but the OBJECTID.
func descriptorOf(names []string, types []FieldType) []byte {
	le := binary.LittleEndian
	b := le.AppendUint32(nil, 4)
	b = le.AppendUint32(b, 0)
	b = le.AppendUint16(b, uint16(len(names)))
	for i, n := range names {
		u := utf16.Encode([]rune(n))
		b = append(b, byte(len(u)))
		for _, c := range u {
			b = le.AppendUint16(b, c)
		}
		b = append(b, 0, byte(types[i]))
		if types[i] == ObjectID {
			b = append(b, 4, 2)
		} else {
			b = append(b, 8, 1, 0)
		}
	}
	return b
}

// TestProTypes: the field types ArcGIS Pro 3.2 added (Int64, DateOnly,
// TimeOnly, TimestampOffset), which GDAL 3.6 cannot write, read from a
// table built by hand: a 64-bit integer past 2^53 exact, a date, a time
// to the millisecond, a local time with its UTC offset.
func TestProTypes(t *testing.T) {
	tb := &table{label: "test", geomIndex: -1}
	desc := descriptorOf([]string{"OBJECTID", "big", "d", "t", "ts", "gone"}, []FieldType{ObjectID, Int64, DateOnly, TimeOnly, TimestampOffset, DateOnly})
	if err := tb.parseFields(desc); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	days := func(tm time.Time) uint64 { return math.Float64bits(float64(tm.Sub(epoch).Milliseconds()) / 86400000) }
	row := []byte{1 << 4} // the fifth nullable field is null
	row = le.AppendUint64(row, uint64(1<<62+1))
	row = le.AppendUint64(row, days(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)))
	row = le.AppendUint64(row, math.Float64bits((12*3600+34*60+56.789)/86400))
	row = le.AppendUint64(row, days(time.Date(2024, 2, 29, 12, 34, 56, 0, time.UTC)))
	row = le.AppendUint16(row, uint16(0xFFFF-300+1)) // -300 minutes
	r := &Reader{t: tb, limits: feature.DefaultLimits(), idIdx: -1}
	if err := r.prepare(); err != nil {
		t.Fatal(err)
	}
	if err := tb.splitRow(row, r.vals, 1<<20); err != nil {
		t.Fatal(err)
	}
	f, err := r.feature(7)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"big":4611686018427387905,"d":"2024-02-29","t":"12:34:56.789","ts":"2024-02-29T12:34:56-05:00","gone":null}`
	if string(f.Properties) != want {
		t.Errorf("properties\n got %s\nwant %s", f.Properties, want)
	}
	types := r.FieldTypes()
	if types["big"] != "Integer64" || types["d"] != "Date" || types["t"] != "Time" || types["ts"] != "DateTime" {
		t.Errorf("OGR types %v", types)
	}
}
