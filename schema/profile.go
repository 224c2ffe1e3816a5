package schema

import (
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Kind is the kind of one property value, as the store's view functions
// (sql safe casts) will see it. Strings are told apart by their text
// because a declared type converts them: "12" under a declared bigint is
// 12, under an inferred schema it is text.
type Kind uint8

// Value kinds.
const (
	KNull Kind = iota
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

func (k Kind) String() string { return kindNames[k] }

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
	only := func(ks ...Kind) bool {
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
func Converts(k Kind, t Type) bool {
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

// Profile counts the kinds of a snapshot's property values and its
// geometry types, feature by feature. The store keeps one per staged
// page (so a resumed poll loses nothing) and merges them at apply.
type Profile struct {
	Features int64
	// Columns in the order their names first appeared.
	Columns  []ColumnProfile
	Geometry map[string]int64
	index    map[string]int
	// seen marks the columns the current feature carried.
	seen []bool
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
	if p.Geometry == nil {
		p.Geometry = make(map[string]int64)
	}
	p.Geometry[geometry]++
	for i := range p.seen {
		p.seen[i] = false
	}
	var err error
	if len(props) > 0 && string(props) != "null" {
		err = scanObject(props, func(name string, k Kind, outOfDouble bool) {
			// As the store repairs it: jsonb holds no NUL.
			name = strings.ReplaceAll(name, "\x00", "\uFFFD")
			i := p.columnAdd(name)
			if p.seen[i] {
				return // a repeated key: jsonb keeps one
			}
			p.seen[i] = true
			p.Columns[i].Kinds[k]++
			if outOfDouble {
				p.Columns[i].outOfDouble++
			}
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
	}
	// Columns q never saw are null in q's features.
	for i := range p.Columns {
		if q.column(p.Columns[i].Name) == nil {
			p.Columns[i].Kinds[KNull] += q.Features
		}
	}
	p.Features += q.Features
	if p.Geometry == nil {
		p.Geometry = make(map[string]int64)
	}
	for g, n := range q.Geometry {
		p.Geometry[g] += n
	}
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
	for g, n := range p.Geometry {
		if g != "" && n > 0 {
			types[g] = true
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
}

// MarshalJSON renders p with kinds by name.
func (p *Profile) MarshalJSON() ([]byte, error) {
	out := profileJSON{Features: p.Features, Geometry: p.Geometry}
	for _, c := range p.Columns {
		cj := columnJSON{Name: c.Name, Kinds: map[string]int64{}, OutOfDouble: c.outOfDouble}
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
	*p = Profile{Features: in.Features, Geometry: in.Geometry}
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
	}
	return nil
}

var (
	strIntRE = regexp.MustCompile(`^-?[0-9]{1,19}$`)
	strNumRE = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]{1,3})?$`)
	dateRE   = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
	tsRE     = regexp.MustCompile(`^([0-9]{4}-[0-9]{2}-[0-9]{2})[T ]([0-9]{2}):([0-9]{2})(:[0-9]{2}(\.[0-9]{1,9})?)?(Z|[+-][0-9]{2}(:?[0-9]{2})?)?$`)
)

// StringKind classifies a string value (unescaped).
func StringKind(s string) Kind {
	switch {
	case s == "true" || s == "false":
		return KStrBool
	case strIntRE.MatchString(s) && fitsInt64(s):
		return KStrInt
	case len(s) <= 64 && strNumRE.MatchString(s):
		return KStrNum
	case dateRE.MatchString(s):
		if validDate(s) {
			return KDate
		}
	case len(s) <= 40:
		if m := tsRE.FindStringSubmatch(s); m != nil && validDate(m[1]) {
			h, _ := strconv.Atoi(m[2])
			mi, _ := strconv.Atoi(m[3])
			sec := 0
			if m[4] != "" {
				sec, _ = strconv.Atoi(m[4][1:3])
			}
			if h < 24 && mi < 60 && sec < 60 {
				return KTimestamp
			}
		}
	}
	return KString
}

func validDate(s string) bool {
	t, err := time.Parse("2006-01-02", s)
	return err == nil && t.Year() >= 1
}

// fitsInt64 reports whether the decimal integer s (-?digits) is within
// int64.
func fitsInt64(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

// NumberKind classifies the JSON number literal s as PostgreSQL's numeric
// will hold it: KInt when no fraction is left once the exponent is applied
// (its display scale is 0) and the value is within int64, else KNum; and
// whether double precision cannot hold it.
func NumberKind(s string) (k Kind, outOfDouble bool) {
	f, err := strconv.ParseFloat(s, 64)
	outOfDouble = err != nil || (f != 0 && (f > 1e308 || f < -1e308 || (f < 1e-307 && f > -1e-307)))
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
