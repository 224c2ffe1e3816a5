package crs

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed" // the table
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

//go:generate go run ./gen -proj /usr/share/proj/proj.db -out proj.tsv.gz

// projTable is the table cmd gen writes from PROJ's proj.db (see
// PROJ-DATA-LICENSE beside it).
//
//go:embed proj.tsv.gz
var projTable []byte

// datum is one geodetic datum of the table.
type datum struct {
	code string  // "EPSG:6269"
	a    float64 // semi-major axis, metres
	rf   float64 // inverse flattening; 0 for a sphere
	pm   float64 // prime meridian, degrees east of Greenwich
}

// entry is one CRS of the table, geographic or projected.
type entry struct {
	code       string // "EPSG:2263", "ESRI:103600"
	srid       int    // its number, which PostGIS uses as its SRID
	deprecated bool
	datum      string
	// unit is the projected CRS's linear unit in metres, or the
	// geographic CRS's angular unit in radians.
	unit   float64
	method string // "" when the parameter match does not know it
	params map[string]float64
	// geographic is set for a geographic CRS (a G line).
	geographic bool
}

// ref is a name's reference to an entry, with the name's tier (0: an EPSG
// entry's own name; 1: an ESRI name, an ESRI entry's own or ESRI's alias
// of an EPSG one; 2: PROJ's alias; 3: another EPSG alias).
type ref[T any] struct {
	e    T
	tier uint8
}

// table is the parsed proj.tsv.gz.
type table struct {
	version    string
	datums     map[string]*datum
	datumNames map[string][]ref[*datum]
	geographic map[string][]ref[*entry]
	projected  map[string][]ref[*entry]
	// byDatum lists the projected and geographic CRSs on each datum.
	projByDatum map[string][]*entry
	geogByDatum map[string][]*entry
	byCode      map[string]*entry
	projCount   int
}

var loadTable = sync.OnceValues(func() (*table, error) { return parseTable(projTable) })

func parseTable(gz []byte) (*table, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("crs: the embedded table: %w", err)
	}
	t := &table{datums: map[string]*datum{}, datumNames: map[string][]ref[*datum]{},
		geographic: map[string][]ref[*entry]{}, projected: map[string][]ref[*entry]{},
		projByDatum: map[string][]*entry{}, geogByDatum: map[string][]*entry{}, byCode: map[string]*entry{}}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		s := sc.Text()
		if v, ok := strings.CutPrefix(s, "# "); ok {
			t.version = v
			continue
		}
		f := strings.Split(s, "\t")
		bad := func(what string) error { return fmt.Errorf("crs: the embedded table, line %d: %s", line, what) }
		switch {
		case f[0] == "D" && len(f) == 6:
			d := &datum{code: f[1]}
			d.a, err = strconv.ParseFloat(f[2], 64)
			if err == nil {
				d.rf, err = strconv.ParseFloat(f[3], 64)
			}
			if err == nil {
				d.pm, err = strconv.ParseFloat(f[4], 64)
			}
			if err != nil {
				return nil, bad(err.Error())
			}
			t.datums[d.code] = d
			for _, n := range strings.Split(f[5], "|") {
				t.datumNames[n[1:]] = append(t.datumNames[n[1:]], ref[*datum]{d, n[0] - '0'})
			}
		case f[0] == "G" && len(f) == 6, f[0] == "P" && len(f) == 8:
			e := &entry{code: f[1], deprecated: f[2] == "1", datum: f[3]}
			_, num, _ := strings.Cut(e.code, ":")
			if e.srid, err = strconv.Atoi(num); err != nil {
				return nil, bad(err.Error())
			}
			if e.unit, err = strconv.ParseFloat(f[4], 64); err != nil {
				return nil, bad(err.Error())
			}
			names, into := f[5], t.geographic
			if f[0] == "P" {
				names, into = f[7], t.projected
				e.method = f[5]
				if f[6] != "" {
					e.params = map[string]float64{}
					for _, kv := range strings.Split(f[6], ",") {
						k, v, _ := strings.Cut(kv, "=")
						if e.params[k], err = strconv.ParseFloat(v, 64); err != nil {
							return nil, bad(err.Error())
						}
					}
				}
				t.projByDatum[e.datum] = append(t.projByDatum[e.datum], e)
				t.projCount++
			} else {
				e.geographic = true
				t.geogByDatum[e.datum] = append(t.geogByDatum[e.datum], e)
			}
			t.byCode[e.code] = e
			for _, n := range strings.Split(names, "|") {
				into[n[1:]] = append(into[n[1:]], ref[*entry]{e, n[0] - '0'})
			}
		default:
			return nil, bad("not a D, G or P line")
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("crs: the embedded table: %w", err)
	}
	return t, nil
}

// normalize lower-cases a name and keeps its letters and digits:
// "NAD83 / New York Long Island (ftUS)", GDAL's
// "NAD83_New_York_Long_Island_ftUS" and "nad83newyorklongislandftus" are
// one name.
func normalize(name string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return -1
	}, name)
}

// best returns the refs of the lowest tier.
func best[T any](refs []ref[T]) []T {
	var out []T
	low := uint8(255)
	for _, r := range refs {
		switch {
		case r.tier < low:
			low, out = r.tier, append(out[:0], r.e)
		case r.tier == low:
			out = append(out, r.e)
		}
	}
	return out
}

// preferred orders CRSs: current before deprecated, EPSG's before ESRI's,
// then by code.
func preferred(a, b *entry) int {
	rank := func(e *entry) int {
		r := 0
		if e.deprecated {
			r += 2
		}
		if !strings.HasPrefix(e.code, "EPSG:") {
			r++
		}
		return r
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra - rb
	}
	return a.srid - b.srid
}
