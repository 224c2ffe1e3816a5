package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ValueKind is the kind of one property value, as the store's view functions
// (sql safe casts) will see it. Strings are told apart by their text
// because a declared type converts them: "12" under a declared bigint is
// 12, under an inferred schema it is text.
type ValueKind uint8

// Value kinds.
const (
	KNull ValueKind = iota
	KBool
	// KInt: a JSON number with no fraction once PostgreSQL's numeric has
	// normalised it (1e2 is 100, 1.0 is not integral), within int64.
	KInt
	// KNum: any other JSON number.
	KNum
	// KStrInt, KStrNum, KStrBool: strings that read as an integer
	// (-?[0-9]{1,19}, within int64), a decimal number (at most 64 bytes,
	// exponent of at most 3 digits), or true/false.
	KStrInt
	KStrNum
	KStrBool
	// KDate: a string YYYY-MM-DD that is a calendar date (year ≥ 1).
	KDate
	// KTimestamp: a string date, 'T' or ' ', hh:mm[:ss[.fff]] and an
	// optional zone (Z, ±hh[:mm]); without one it is taken as UTC.
	KTimestamp
	// KString: any other string.
	KString
	// KNested: a JSON object or array.
	KNested
	numKinds
)

var kindNames = [numKinds]string{"null", "bool", "int", "num", "strint", "strnum", "strbool", "date", "timestamp", "string", "nested"}

func (k ValueKind) String() string { return kindNames[k] }

// Infer is the type of a column whose non-null values are of the kinds
// counted in kinds. The widening rules:
//
//   - no non-null value: text (nothing says otherwise);
//   - any object or array: jsonb;
//   - only booleans: boolean;
//   - only integers (JSON numbers within int64): bigint;
//   - integers and other numbers: numeric (exact: no binary rounding of
//     0.1, no limit on digits);
//   - only dates: date; dates and timestamps: timestamptz (a date is its
//     midnight UTC);
//   - any other mix (a number and a string, a boolean and a number):
//     text. Strings that look like numbers or booleans stay text when
//     inferred: "02134" is a ZIP code, not 2134. Only a declared type
//     reads them as numbers.
func Infer(kinds [numKinds]int64) Type {
	var set uint32
	for k := KBool; k < numKinds; k++ {
		if kinds[k] > 0 {
			set |= 1 << k
		}
	}
	only := func(ks ...ValueKind) bool {
		var m uint32
		for _, k := range ks {
			m |= 1 << k
		}
		return set&^m == 0
	}
	switch {
	case set == 0:
		return Text
	case set&(1<<KNested) != 0:
		return JSON
	case only(KBool):
		return Boolean
	case only(KInt):
		return BigInt
	case only(KInt, KNum):
		return Numeric
	case only(KDate):
		return Date
	case only(KDate, KTimestamp):
		return Timestamp
	}
	return Text
}

// Converts reports whether a value of kind k converts to t in the typed
// view (the safe casts of migrations' ingestd_as_* functions); one that
// does not is NULL there, and counted as Unconverted.
func Converts(k ValueKind, t Type) bool {
	switch t {
	case Text, JSON:
		return true
	case BigInt:
		return k == KInt || k == KStrInt
	case Numeric:
		return k == KInt || k == KNum || k == KStrInt || k == KStrNum
	case Double:
		return k == KInt || k == KStrInt || k == KNum || k == KStrNum
	case Boolean:
		return k == KBool || k == KStrBool
	case Date:
		return k == KDate
	case Timestamp:
		return k == KDate || k == KTimestamp
	}
	return false
}

// ColumnProfile counts one property's values by kind.
type ColumnProfile struct {
	Name  string
	Kinds [numKinds]int64
	// outOfDouble counts numbers double precision cannot hold (1e400).
	outOfDouble int64
	// scales counts the JSON numbers (KInt, KNum) a double gives back by
	// their scale (numberClass), wide those it cannot (more than 15
	// significant digits, or out of its range).
	scales []scaleCount
	wide   int64
}

type scaleCount struct {
	scale int32
	n     int64
}

// The classes of a value for double precision (numberClass), besides a
// scale (≥ 0).
const (
	notANumber    int32 = -1
	wideForDouble int32 = -2
)

// doubleDigits is how many significant decimal digits a double precision
// value converted to numeric keeps (PostgreSQL's float8 to numeric cast
// prints DBL_DIG digits): a number of at most as many comes back exactly.
const doubleDigits = 15

// numberClass is the JSON number literal s's class for double precision:
// the display scale PostgreSQL's numeric (and so jsonb) gives it —
// fraction digits less the exponent, at least 0 — when it has at most
// doubleDigits significant digits, else wideForDouble.
func numberClass(s string) int32 {
	s = strings.TrimPrefix(s, "-")
	if len(s) <= doubleDigits && digitsOnly(s) {
		return 0 // the common case: a short integer
	}
	mant, exp := s, 0
	if i := indexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > 1000 || e < -1000 {
			return wideForDouble
		}
		exp = e
	}
	intPart, frac := mant, ""
	if i := indexAny(mant, "."); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	digits := strings.TrimRight(trimLeftZeros(intPart+frac), "0")
	if len(digits) > doubleDigits {
		return wideForDouble
	}
	return int32(max(len(frac)-exp, 0))
}

// countClass adds n to the count of class c (a scale or wideForDouble;
// notANumber is not counted).
func (c *ColumnProfile) countClass(class int32, n int64) {
	switch {
	case class == notANumber:
		return
	case class == wideForDouble:
		c.wide += n
		return
	}
	for i := range c.scales {
		if c.scales[i].scale == class {
			c.scales[i].n += n
			return
		}
	}
	c.scales = append(c.scales, scaleCount{class, n})
}

// DoubleScale is the scale at which a double precision column gives back
// every JSON number the profile counted for it: when all of them have at
// most 15 significant digits and one display scale s (0.10 and 1.25: 2; 7
// and 1e3: 0), round(value::numeric, s) renders each as the source's
// jsonb does, and ok is true. ok is false when the numbers' scales differ,
// one does not fit, the column has no numbers, or the profile was stored
// before it counted scales.
func (c *ColumnProfile) DoubleScale() (scale int, ok bool) {
	numbers := c.Kinds[KInt] + c.Kinds[KNum]
	var counted, n int64
	for _, sc := range c.scales {
		if sc.n > 0 {
			counted += sc.n
			scale = int(sc.scale)
			n++
		}
	}
	return scale, numbers > 0 && c.wide == 0 && n == 1 && counted == numbers
}

func (c *ColumnProfile) nonNull() int64 {
	var n int64
	for k := KBool; k < numKinds; k++ {
		n += c.Kinds[k]
	}
	return n
}

func (c *ColumnProfile) unconverted(t Type) int64 {
	var n int64
	for k := KBool; k < numKinds; k++ {
		if !Converts(k, t) {
			n += c.Kinds[k]
		}
	}
	if t == Double {
		n += c.outOfDouble
	}
	return n
}

// AllConvert reports whether every value p counted for the property name
// converts to t (Converts, and a double within range): so for a property
// p never saw.
func (p *Profile) AllConvert(name string, t Type) bool {
	c := p.column(name)
	return c == nil || c.unconverted(t) == 0
}

// Profile counts the kinds of a snapshot's property values and its
// geometry types, feature by feature. The store keeps one per staged
// page (so a resumed poll loses nothing) and merges them at apply.
type Profile struct {
	Features int64
	// Columns in the order their names first appeared.
	Columns []ColumnProfile
	// geoms counts features by geometry type ("" for none): a handful of
	// types, searched in order.
	geoms []geomCount
	index map[string]int
	// seen marks the columns the current feature carried; last[k] is the
	// column of the last feature's k-th key (features of a layer mostly
	// share their keys' order, which spares a map lookup per value).
	seen []bool
	last []int
	// kind[i], ood[i]: what the current feature's value of column i was
	// counted as, so that a repeated key counts its last value (jsonb
	// keeps the last).
	kind  []ValueKind
	ood   []bool
	class []int32
}

type geomCount struct {
	name string
	n    int64
}

func (p *Profile) addGeometry(name string, n int64) {
	for i := range p.geoms {
		if p.geoms[i].name == name {
			p.geoms[i].n += n
			return
		}
	}
	p.geoms = append(p.geoms, geomCount{name, n})
}

func (p *Profile) column(name string) *ColumnProfile {
	if i, ok := p.index[name]; ok {
		return &p.Columns[i]
	}
	return nil
}

func (p *Profile) columnAdd(name string) int {
	if p.index == nil {
		p.index = make(map[string]int)
	}
	i, ok := p.index[name]
	if !ok {
		i = len(p.Columns)
		p.index[name] = i
		p.Columns = append(p.Columns, ColumnProfile{Name: name})
		// Earlier features did not carry it: null for them.
		p.Columns[i].Kinds[KNull] = p.Features
		p.seen = append(p.seen, false)
		p.kind = append(p.kind, KNull)
		p.ood = append(p.ood, false)
		p.class = append(p.class, notANumber)
	}
	return i
}

// ErrNotObject is returned by AddFeature for properties that are not a
// JSON object.
var ErrNotObject = errors.New("schema: properties are not a JSON object")

// AddFeature counts one feature: its properties (a JSON object, or nil)
// and its geometry type (GeometryName's spelling, "" for none). Properties
// that do not scan are counted as a feature without properties, and the
// error is returned.
func (p *Profile) AddFeature(props []byte, geometry string) error {
	p.addGeometry(geometry, 1)
	for i := range p.seen {
		p.seen[i] = false
	}
	var err error
	if len(props) > 0 && string(props) != "null" {
		pos := 0
		err = scanObject(props, func(name []byte, v scanned) {
			k, outOfDouble := v.kind, v.outOfDouble
			var i int
			if pos < len(p.last) && p.Columns[p.last[pos]].Name == string(name) {
				i = p.last[pos]
			} else {
				var ok bool
				if i, ok = p.index[string(name)]; !ok {
					// As the store repairs it: jsonb holds no NUL.
					i = p.columnAdd(strings.ReplaceAll(string(name), "\x00", "\uFFFD"))
				}
				if pos < len(p.last) {
					p.last[pos] = i
				} else {
					p.last = append(p.last, i)
				}
			}
			pos++
			c := &p.Columns[i]
			if p.seen[i] {
				// A repeated key: jsonb keeps the last value, so that
				// is the one counted.
				c.Kinds[p.kind[i]]--
				if p.ood[i] {
					c.outOfDouble--
				}
				c.countClass(p.class[i], -1)
			}
			p.seen[i], p.kind[i], p.ood[i], p.class[i] = true, k, outOfDouble, v.class
			c.Kinds[k]++
			if outOfDouble {
				c.outOfDouble++
			}
			c.countClass(v.class, 1)
		})
	}
	for i, s := range p.seen {
		if !s {
			p.Columns[i].Kinds[KNull]++
		}
	}
	// Last: a column this feature added was null in the features before.
	p.Features++
	return err
}

// Merge adds q's counts to p; q's new columns follow p's.
func (p *Profile) Merge(q *Profile) {
	for _, qc := range q.Columns {
		i := p.columnAdd(qc.Name)
		c := &p.Columns[i]
		for k := range qc.Kinds {
			c.Kinds[k] += qc.Kinds[k]
		}
		c.outOfDouble += qc.outOfDouble
		c.wide += qc.wide
		for _, sc := range qc.scales {
			c.countClass(sc.scale, sc.n)
		}
	}
	// Columns q never saw are null in q's features.
	for i := range p.Columns {
		if q.column(p.Columns[i].Name) == nil {
			p.Columns[i].Kinds[KNull] += q.Features
		}
	}
	p.Features += q.Features
	for _, g := range q.geoms {
		p.addGeometry(g.name, g.n)
	}
}

// Subtract takes q's counts out of p, where q profiles features that p
// counted (the versions a delta replaces or removes): what is left
// profiles the others. A column keeps its place when no value of it is
// left (its values are then all null, as a feature that carries the key
// with null would count); a geometry type none is left of goes.
func (p *Profile) Subtract(q *Profile) {
	for _, qc := range q.Columns {
		c := p.column(qc.Name)
		if c == nil {
			continue // q counted a column p never saw: nothing to take
		}
		for k := range qc.Kinds {
			c.Kinds[k] = max(c.Kinds[k]-qc.Kinds[k], 0)
		}
		c.outOfDouble = max(c.outOfDouble-qc.outOfDouble, 0)
		c.wide = max(c.wide-qc.wide, 0)
		for _, sc := range qc.scales {
			c.countClass(sc.scale, -sc.n)
		}
		c.scales = slices.DeleteFunc(c.scales, func(sc scaleCount) bool { return sc.n <= 0 })
	}
	// Columns q never saw were null in q's features.
	for i := range p.Columns {
		if q.column(p.Columns[i].Name) == nil {
			p.Columns[i].Kinds[KNull] = max(p.Columns[i].Kinds[KNull]-q.Features, 0)
		}
	}
	p.Features = max(p.Features-q.Features, 0)
	for _, g := range q.geoms {
		p.addGeometry(g.name, -g.n)
	}
	p.geoms = slices.DeleteFunc(p.geoms, func(g geomCount) bool { return g.n <= 0 })
}

// multi maps a single geometry type to its multi-part one.
var multi = map[string]string{"Point": "MultiPoint", "LineString": "MultiLineString", "Polygon": "MultiPolygon"}

// GeometryType is the view's geometry type for the profiled geometries:
// "" when there are none, the one type when all share it, the multi-part
// type when single and multi-part ones of one family mix (Polygon and
// MultiPolygon: the view promotes with ST_Multi, as ogr2ogr's
// -nlt PROMOTE_TO_MULTI does), else "Geometry".
func (p *Profile) GeometryType() string {
	types := map[string]bool{}
	for _, g := range p.geoms {
		if g.name != "" && g.n > 0 {
			types[g.name] = true
		}
	}
	switch len(types) {
	case 0:
		return ""
	case 1:
		for g := range types {
			return g
		}
	case 2:
		for single, m := range multi {
			if types[single] && types[m] {
				return m
			}
		}
	}
	return "Geometry"
}

// profileJSON is a Profile as stored with its page (staged_pages.profile).
type profileJSON struct {
	Features int64            `json:"n"`
	Columns  []columnJSON     `json:"c,omitempty"`
	Geometry map[string]int64 `json:"g,omitempty"`
}

type columnJSON struct {
	Name        string           `json:"name"`
	Kinds       map[string]int64 `json:"kinds"`
	OutOfDouble int64            `json:"out_of_double,omitempty"`
	// Scales: the numbers' counts by scale; Wide: those a double does not
	// give back (ColumnProfile.scales, wide).
	Scales map[string]int64 `json:"scales,omitempty"`
	Wide   int64            `json:"wide,omitempty"`
}

// MarshalJSON renders p with kinds by name.
func (p *Profile) MarshalJSON() ([]byte, error) {
	out := profileJSON{Features: p.Features}
	if len(p.geoms) > 0 {
		out.Geometry = make(map[string]int64, len(p.geoms))
		for _, g := range p.geoms {
			out.Geometry[g.name] += g.n
		}
	}
	for _, c := range p.Columns {
		cj := columnJSON{Name: c.Name, Kinds: map[string]int64{}, OutOfDouble: c.outOfDouble, Wide: c.wide}
		for _, sc := range c.scales {
			if sc.n > 0 {
				if cj.Scales == nil {
					cj.Scales = map[string]int64{}
				}
				cj.Scales[strconv.Itoa(int(sc.scale))] = sc.n
			}
		}
		for k, n := range c.Kinds {
			if n > 0 {
				cj.Kinds[kindNames[k]] = n
			}
		}
		out.Columns = append(out.Columns, cj)
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (p *Profile) UnmarshalJSON(b []byte) error {
	var in profileJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*p = Profile{Features: in.Features}
	for _, name := range slices.Sorted(maps.Keys(in.Geometry)) {
		p.addGeometry(name, in.Geometry[name])
	}
	for _, cj := range in.Columns {
		i := p.columnAdd(cj.Name)
		c := &p.Columns[i]
		c.Kinds[KNull] = 0
		for name, n := range cj.Kinds {
			for k, kn := range kindNames {
				if kn == name {
					c.Kinds[k] = n
				}
			}
		}
		c.outOfDouble = cj.OutOfDouble
		c.wide = cj.Wide
		for _, name := range slices.Sorted(maps.Keys(cj.Scales)) {
			scale, err := strconv.Atoi(name)
			if err != nil || scale < 0 {
				return fmt.Errorf("schema: profile of %q: bad scale %q", cj.Name, name)
			}
			c.countClass(int32(scale), cj.Scales[name])
		}
	}
	return nil
}

var (
	dateRE = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
	tsRE   = regexp.MustCompile(`^([0-9]{4}-[0-9]{2}-[0-9]{2})[T ]([0-9]{2}):([0-9]{2})(:[0-9]{2}(\.[0-9]{1,9})?)?(Z|[+-][0-9]{2}(:?[0-9]{2})?)?$`)
)

// StringKind classifies a string value (unescaped). It runs for every
// string value staged, so the common cases (a name, a code) are decided
// by the first byte, and numbers are checked by hand; only strings shaped
// like dates reach the regular expressions.
func StringKind(s string) ValueKind {
	if s == "" {
		return KString
	}
	switch c := s[0]; {
	case c == 't' || c == 'f':
		if s == "true" || s == "false" {
			return KStrBool
		}
		return KString
	case c != '-' && (c < '0' || c > '9'):
		return KString
	}
	switch {
	case isStrInt(s) && fitsInt64(s):
		return KStrInt
	case len(s) <= 64 && isStrNum(s):
		return KStrNum
	case len(s) == 10:
		if validDate(s) {
			return KDate
		}
	case len(s) >= 16 && len(s) <= 40 && s[4] == '-':
		if m := tsRE.FindStringSubmatch(s); m != nil && validDate(m[1]) {
			h, _ := strconv.Atoi(m[2])
			mi, _ := strconv.Atoi(m[3])
			sec := 0
			if m[4] != "" {
				sec, _ = strconv.Atoi(m[4][1:3])
			}
			// PostgreSQL takes 24:00:00 as the next midnight.
			midnight := h == 24 && mi == 0 && sec == 0 && strings.Trim(strings.TrimPrefix(m[5], "."), "0") == ""
			if (h < 24 || midnight) && mi < 60 && sec < 60 {
				return KTimestamp
			}
		}
	}
	return KString
}

// isStrInt: -?[0-9]{1,19}.
func isStrInt(s string) bool {
	d := strings.TrimPrefix(s, "-")
	return len(d) >= 1 && len(d) <= 19 && digitsOnly(d)
}

// isStrNum: -?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]{1,3})?.
func isStrNum(s string) bool {
	s = strings.TrimPrefix(s, "-")
	i := leadingDigits(s)
	if i == 0 {
		return false
	}
	s = s[i:]
	if strings.HasPrefix(s, ".") {
		j := leadingDigits(s[1:])
		if j == 0 {
			return false
		}
		s = s[1+j:]
	}
	if s == "" {
		return true
	}
	if s[0] != 'e' && s[0] != 'E' {
		return false
	}
	s = s[1:]
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	return len(s) >= 1 && len(s) <= 3 && digitsOnly(s)
}

func leadingDigits(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

func digitsOnly(s string) bool { return leadingDigits(s) == len(s) }

// validDate reports whether s is YYYY-MM-DD, a calendar date of a year
// from 1 (PostgreSQL has no year 0).
func validDate(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' || !digitsOnly(s[:4]) || !digitsOnly(s[5:7]) || !digitsOnly(s[8:]) {
		return false
	}
	y, _ := strconv.Atoi(s[:4])
	m, _ := strconv.Atoi(s[5:7])
	d, _ := strconv.Atoi(s[8:])
	if y < 1 || m < 1 || m > 12 || d < 1 {
		return false
	}
	// Day 0 of the next month is the last of this one.
	return d <= time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// fitsInt64 reports whether the decimal integer s (-?digits) is within
// int64.
func fitsInt64(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

// The bounds ingestd_as_double holds a number within (by its exact
// value), and how close to one a double must be for the exact check.
var (
	doubleMax, doubleMin = mustRat("1e308"), mustRat("1e-307")
)

const doubleBoundSlack = 1e-12

func mustRat(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic("schema: bad constant " + s)
	}
	return r
}

// nearDoubleBound reports whether f lies so close to ±1e308 or ±1e-307
// that its rounding may have crossed the bound.
func nearDoubleBound(f float64) bool {
	a := math.Abs(f)
	return (a >= 1e308*(1-doubleBoundSlack) && a <= 1e308*(1+doubleBoundSlack)) ||
		(a >= 1e-307*(1-doubleBoundSlack) && a <= 1e-307*(1+doubleBoundSlack))
}

// withinDoubleBounds reports whether the number literal s, exactly, is 0
// or of a magnitude within [1e-307, 1e308], as ingestd_as_double asks.
func withinDoubleBounds(s string) bool {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return false
	}
	r.Abs(r)
	return r.Sign() == 0 || (r.Cmp(doubleMin) >= 0 && r.Cmp(doubleMax) <= 0)
}

// NumberKind classifies the JSON number literal s as PostgreSQL's numeric
// will hold it: KInt when no fraction is left once the exponent is applied
// (its display scale is 0) and the value is within int64, else KNum; and
// whether double precision cannot hold it.
func NumberKind(s string) (k ValueKind, outOfDouble bool) {
	if isStrInt(s) && len(s) <= 18 {
		return KInt, false // the common case, decided without parsing
	}
	if indexAny(s, "eE") >= 0 || len(s) > 300 {
		f, err := strconv.ParseFloat(s, 64)
		outOfDouble = err != nil || (f != 0 && (f > 1e308 || f < -1e308 || (f < 1e-307 && f > -1e-307)))
		if err == nil && nearDoubleBound(f) {
			// Rounded to a double, 1.00000000000000000001e308 is 1e308:
			// the safe cast compares the exact numeric with the bounds.
			outOfDouble = !withinDoubleBounds(s)
		}
		// A non-zero number that underflows to 0 (1e-400) is out too.
		mant, _, _ := strings.Cut(strings.ToLower(s), "e")
		outOfDouble = outOfDouble || (f == 0 && strings.Trim(mant, "-+0.") != "")
	}
	mant, exp := s, 0
	if i := indexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e, err := strconv.Atoi(s[i+1:])
		if err != nil {
			return KNum, outOfDouble
		}
		exp = e
	}
	neg := len(mant) > 0 && mant[0] == '-'
	if neg {
		mant = mant[1:]
	}
	intPart, frac := mant, ""
	if i := indexAny(mant, "."); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	if len(frac)-exp > 0 {
		return KNum, outOfDouble
	}
	digits := trimLeftZeros(intPart + frac)
	if digits == "" {
		return KInt, outOfDouble
	}
	zeros := exp - len(frac)
	if len(digits)+zeros > 19 {
		return KNum, outOfDouble
	}
	for range zeros {
		digits += "0"
	}
	if neg {
		digits = "-" + digits
	}
	if fitsInt64(digits) {
		return KInt, outOfDouble
	}
	return KNum, outOfDouble
}

func indexAny(s, chars string) int {
	for i := 0; i < len(s); i++ {
		for j := 0; j < len(chars); j++ {
			if s[i] == chars[j] {
				return i
			}
		}
	}
	return -1
}

func trimLeftZeros(s string) string {
	for len(s) > 0 && s[0] == '0' {
		s = s[1:]
	}
	return s
}
