package crs

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ingestd/ingestd/feature"
)

// Method says how a layer's CRS was identified; polls.crs_identified_by
// holds it.
type Method string

// The ways a CRS is identified, in the order Identify tries them (the
// feed's crs: setting overrides them all).
const (
	// ByAuthority: the WKT's own AUTHORITY["EPSG",n] or ID["EPSG",n], or
	// the EPSG code a GeoPackage or FlatGeobuf names.
	ByAuthority Method = "authority"
	// ByName: the CRS's name is one PROJ knows (an EPSG or ESRI name, or
	// an alias) and its definition agrees.
	ByName Method = "name"
	// ByParameters: the projection, its parameters, the datum and the unit
	// equal an EPSG (or ESRI) definition within the tolerances below.
	ByParameters Method = "parameters"
	// BySetting: the feed's crs: setting, which overrides the file.
	BySetting Method = "setting"
)

// Tolerances of the parameter match: each is about a millimetre on the
// ground, far below the rounding a .prj's 15 significant digits leave
// and far below the smallest difference between two distinct CRSs of
// PROJ's database (State Plane zones in feet and metres differ by their
// unit; NAD83 and NAD83(HARN) zones by their datum).
const (
	angleTolerance  = 1e-8 // degrees (1.1 mm of latitude)
	lengthTolerance = 1e-3 // metres
	scaleTolerance  = 1e-9 // a scale factor: 1 mm in 1,000 km
	unitTolerance   = 1e-9 // relative, of a unit's size in metres or radians
	axisTolerance   = 1e-3 // metres, of an ellipsoid's semi-major axis
	flatTolerance   = 1e-7 // of an inverse flattening (GRS 80 and WGS 84 differ by 1.5e-6)
)

// Result is an identified CRS.
type Result struct {
	// SRID is its code, which PostGIS's spatial_ref_sys uses as its SRID
	// (EPSG codes, and ESRI's own codes that are no EPSG code).
	SRID int
	// Code is its authority and code, "EPSG:2263" or "ESRI:103600".
	Code string
	// By says how it was identified.
	By Method
}

// UnknownError is a CRS the table has no entry for, by name nor by its
// definition: what the WKT says, for the message that asks for crs:.
type UnknownError struct {
	// Kind is "projected" or "geographic"; Name the CRS's name.
	Kind, Name string
	// Projection, Datum and Unit are as the WKT names them; UnitFactor
	// is the unit's size in metres (radians for a geographic CRS).
	Projection, Datum, Unit string
	UnitFactor              float64
	// Why says what failed, when one thing did: a datum no EPSG or ESRI
	// datum is called, a projection the parameter match does not know.
	Why string
}

func (e *UnknownError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the %s CRS %s (", e.Kind, feature.Snippet(e.Name))
	if e.Kind == "projected" {
		fmt.Fprintf(&b, "projection %s, ", orNone(e.Projection))
	}
	fmt.Fprintf(&b, "datum %s, unit %s", orNone(e.Datum), orNone(e.Unit))
	if e.UnitFactor > 0 {
		size := "rad"
		if e.Kind == "projected" {
			size = "m"
		}
		fmt.Fprintf(&b, " = %s %s", strconv.FormatFloat(e.UnitFactor, 'g', 10, 64), size)
	}
	b.WriteString(") matches no EPSG or ESRI CRS of PROJ's database by name, nor by its projection, parameters, datum and unit")
	if e.Why != "" {
		b.WriteString(" (" + e.Why + ")")
	}
	b.WriteString(": set the feed's crs: to the EPSG code of the CRS the data is in")
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return feature.Snippet(s)
}

// Identify finds the EPSG (or ESRI) code of a CRS written as WKT 1 (OGC's
// or ESRI's dialect, as a Shapefile's .prj has it) or WKT 2: its own
// authority code when it has one; else its name among the names PROJ's
// database gives EPSG and ESRI CRSs, when that CRS's definition agrees;
// else the preferred CRS (current, EPSG's, the lowest code) on the WKT's
// datum whose projection, parameters and unit equal the WKT's within a
// millimetre on the ground. A CRS none of
// these identify is an *UnknownError naming what the WKT says; a guessed
// code would put every feature in the wrong place without a word.
func Identify(wkt string) (Result, error) {
	t, err := loadTable()
	if err != nil {
		return Result{}, err
	}
	root, err := parseWKT(wkt)
	if err != nil {
		return Result{}, fmt.Errorf("not a WKT CRS (%s): %v; set the feed's crs: to the EPSG code of the CRS the data is in", feature.Snippet(strings.TrimSpace(wkt)), err)
	}
	if root.kw == "COMPD_CS" || root.kw == "COMPOUNDCRS" {
		if h := root.child("PROJCS", "PROJCRS", "PROJECTEDCRS", "GEOGCS", "GEOGCRS", "GEOGRAPHICCRS", "GEODCRS", "GEODETICCRS"); h != nil {
			root = h
		}
	}
	if auth, code := root.authority(); auth == "EPSG" || auth == "ESRI" {
		if n, err := strconv.Atoi(code); err == nil && n > 0 && (auth == "EPSG" || t.byCode[auth+":"+code] != nil) {
			return Result{SRID: n, Code: auth + ":" + code, By: ByAuthority}, nil
		}
	}
	d, err := t.describe(root)
	if err != nil {
		return Result{}, err
	}
	if e := t.byName(d); e != nil {
		return Result{SRID: e.srid, Code: e.code, By: ByName}, nil
	}
	if e := t.byParameters(d); e != nil {
		return Result{SRID: e.srid, Code: e.code, By: ByParameters}, nil
	}
	u := &UnknownError{Kind: d.kind, Name: d.name, Projection: d.projection, Datum: d.datumName, Unit: d.unitName, UnitFactor: d.unit}
	switch {
	case len(d.datums) == 0 && d.datumName != "":
		u.Why = "no EPSG or ESRI datum has that name and ellipsoid"
	case d.kind == "projected" && d.method == "":
		u.Why = "the parameter match does not know that projection"
	}
	return Result{}, u
}

// described is what a WKT says about its CRS, in the table's terms.
type described struct {
	kind       string // "projected" or "geographic"
	name       string
	datumName  string
	datums     []*datum // the datums datumName may be, the ellipsoid agreeing
	projection string   // as written
	method     string   // the table's name for it; "" when unknown
	params     map[string]float64
	unitName   string
	unit       float64 // metres (projected) or radians (geographic); 0 unknown
}

// describe reads the WKT's name, datum, unit, projection and parameters.
func (t *table) describe(root *node) (*described, error) {
	d := &described{name: root.name()}
	var geog *node
	switch root.kw {
	case "PROJCS", "PROJCRS", "PROJECTEDCRS":
		d.kind = "projected"
		geog = root.child("GEOGCS", "BASEGEOGCRS", "BASEGEODCRS", "GEOGCRS", "GEODCRS")
	case "GEOGCS", "GEOGCRS", "GEOGRAPHICCRS", "GEODCRS", "GEODETICCRS":
		d.kind = "geographic"
		geog = root
	default:
		return nil, fmt.Errorf("a WKT %s, not a projected or geographic CRS: set the feed's crs: to the EPSG code of the CRS the data is in", root.kw)
	}
	angular := math.Pi / 180 // WKT 2 parameters carry their own unit
	if u := geog.child("UNIT", "ANGLEUNIT"); u != nil {
		if f, ok := u.num(1); ok && f > 0 {
			angular = f
		}
		if d.kind == "geographic" {
			d.unitName, d.unit = u.name(), angular
		}
	}
	t.describeDatum(d, geog)
	if d.kind == "projected" {
		describeProjection(d, root, angular)
	}
	return d, nil
}

// describeDatum reads the geographic CRS geog's datum, ellipsoid and prime
// meridian into d, with the table's datums they may name.
func (t *table) describeDatum(d *described, geog *node) {
	dn := geog.child("DATUM", "GEODETICDATUM", "TRF", "ENSEMBLE")
	d.datumName = dn.name()
	var pm float64
	if p := geog.child("PRIMEM", "PRIMEMERIDIAN"); p != nil {
		v, _ := p.num(1)
		pm = degrees(v, angleUnit(p, math.Pi/180))
	}
	var a, rf float64
	sph := dn.child("SPHEROID", "ELLIPSOID")
	if sph != nil {
		a, _ = sph.num(1)
		rf, _ = sph.num(2)
		if u := sph.child("LENGTHUNIT", "UNIT"); u != nil {
			if f, ok := u.num(1); ok {
				a *= f
			}
		}
	}
	d.datums = t.datumsNamed(d.datumName, sph != nil, a, rf, pm)
	if auth, code := geog.authority(); len(d.datums) == 0 && auth != "" {
		// A hand-cut WKT may give the geographic CRS's code alone.
		if e := t.byCode[auth+":"+code]; e != nil && e.geographic && t.datums[e.datum] != nil {
			d.datums = append(d.datums, t.datums[e.datum])
		}
	}
	if len(d.datums) == 0 {
		// ESRI names a datum apart from its prime meridian ("D_NTF" and
		// PRIMEM["Paris"]), EPSG as one ("NTF (Paris)"): the geographic
		// CRS's name ("GCS_NTF_Paris") then says which.
		for _, e := range best(t.geographic[normalize(geog.name())]) {
			if dt := t.datums[e.datum]; dt != nil && (sph == nil || math.Abs(dt.a-a) <= axisTolerance && math.Abs(dt.rf-rf) <= flatTolerance) && angleDiff(dt.pm, pm) <= angleTolerance {
				d.datums = append(d.datums, dt)
			}
		}
	}
}

// describeProjection reads a projected CRS's unit, projection and
// parameters (angles in degrees, lengths in metres) into d; angular is the
// geographic CRS's angle unit in radians.
func describeProjection(d *described, root *node, angular float64) {
	if u := root.child("UNIT", "LENGTHUNIT"); u != nil {
		d.unitName = u.name()
		d.unit, _ = u.num(1)
	} else if cs := root.child("AXIS"); cs != nil {
		if u := cs.child("LENGTHUNIT", "UNIT"); u != nil {
			d.unitName = u.name()
			d.unit, _ = u.num(1)
		}
	}
	params := root.children("PARAMETER")
	var method string
	if conv := root.child("CONVERSION"); conv != nil { // WKT 2
		m := conv.child("METHOD", "PROJECTION")
		d.projection = m.name()
		method = methodByID(m)
		params = conv.children("PARAMETER")
	} else {
		d.projection = root.child("PROJECTION").name()
	}
	if method == "" {
		method = methodNames[normalize(d.projection)]
	}
	raw := map[string]float64{}
	for _, p := range params {
		v, ok := p.num(1)
		if !ok {
			return // a parameter without a value: nothing to compare
		}
		key := paramByID(p)
		if key == "" {
			key = paramNames[normalize(p.name())]
		}
		if key == "" {
			key = "?" + normalize(p.name()) // matches nothing in the table
		}
		switch {
		case angularParams[key]:
			v = degrees(v, angleUnit(p, angular))
		case key == "x_0" || key == "y_0":
			v *= lengthUnit(p, d.unit)
		}
		raw[key] = v
	}
	if method != "" && len(raw) > 0 {
		// A WKT without parameters (a hand-cut .prj) leaves its name to
		// decide.
		d.method, d.params = canonical(method, raw)
	}
}

// angleUnit is the size in radians of a WKT 2 parameter's own ANGLEUNIT,
// or def.
func angleUnit(n *node, def float64) float64 {
	if u := n.child("ANGLEUNIT", "UNIT"); u != nil {
		if f, ok := u.num(1); ok && f > 0 {
			return f
		}
	}
	return def
}

// lengthUnit is the size in metres of a WKT 2 parameter's own
// LENGTHUNIT, or def.
func lengthUnit(n *node, def float64) float64 {
	if u := n.child("LENGTHUNIT", "UNIT"); u != nil {
		if f, ok := u.num(1); ok && f > 0 {
			return f
		}
	}
	return def
}

// degrees converts v in an angular unit of size unit radians to degrees;
// degrees and grads exactly, whatever digits of π the WKT wrote.
func degrees(v, unit float64) float64 {
	switch {
	case sameRel(unit, math.Pi/180, 1e-9):
		return v
	case sameRel(unit, math.Pi/200, 1e-9):
		return v * 0.9
	}
	return v * unit * 180 / math.Pi
}

func sameRel(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b))
}

// datumsNamed are the datums called name (with or without ESRI's "D_"
// prefix), whose ellipsoid and prime meridian agree with the WKT's when it
// gives them; those of the best-tier name.
func (t *table) datumsNamed(name string, hasEllipsoid bool, a, rf, pm float64) []*datum {
	n := normalize(name)
	keys := []string{n}
	if strings.HasPrefix(strings.ToUpper(name), "D_") {
		keys = append(keys, n[1:])
	} else {
		keys = append(keys, "d"+n)
	}
	for _, k := range keys {
		var refs []ref[*datum]
		for _, r := range t.datumNames[k] {
			d := r.e
			if hasEllipsoid && (math.Abs(d.a-a) > axisTolerance || math.Abs(d.rf-rf) > flatTolerance) {
				continue
			}
			if angleDiff(d.pm, pm) > angleTolerance {
				continue
			}
			refs = append(refs, r)
		}
		if len(refs) > 0 {
			return best(refs)
		}
	}
	return nil
}

// angleDiff is the difference of two angles in degrees, modulo 360.
func angleDiff(a, b float64) float64 {
	d := math.Mod(math.Abs(a-b), 360)
	return math.Min(d, 360-d)
}

// onDatum reports whether e is on one of the datums (true when the WKT's
// datum is unknown: the name alone decides then).
func (d *described) onDatum(e *entry) bool {
	if len(d.datums) == 0 {
		return true
	}
	return slices.ContainsFunc(d.datums, func(x *datum) bool { return x.code == e.datum })
}

// byName is the CRS whose name (or alias) the WKT's is, when its
// definition agrees with the WKT's as far as both are known; of several,
// the preferred, then the one whose own name it is; nil when none.
func (t *table) byName(d *described) *entry {
	names := t.projected
	if d.kind == "geographic" {
		names = t.geographic
	}
	type match struct {
		e    *entry
		tier uint8
	}
	var ok []match
	for _, r := range names[normalize(d.name)] {
		e := r.e
		if d.unit > 0 && !sameRel(e.unit, d.unit, unitTolerance) || !d.onDatum(e) {
			continue
		}
		if d.kind == "projected" && d.method != "" && e.method != "" && !(e.method == d.method && sameParams(e.params, d.params)) {
			continue
		}
		ok = append(ok, match{e, r.tier})
	}
	if len(ok) == 0 {
		return nil
	}
	return slices.MinFunc(ok, func(a, b match) int {
		if c := preferred(a.e, b.e); c != 0 {
			return c
		}
		return int(a.tier) - int(b.tier)
	}).e
}

// byParameters is the preferred CRS on the WKT's datum with its unit,
// projection and parameters; nil when none.
func (t *table) byParameters(d *described) *entry {
	var ok []*entry
	for _, dt := range d.datums {
		if d.kind == "geographic" {
			for _, e := range t.geogByDatum[dt.code] {
				if d.unit == 0 || sameRel(e.unit, d.unit, unitTolerance) {
					ok = append(ok, e)
				}
			}
			continue
		}
		if d.method == "" || d.unit == 0 {
			return nil
		}
		for _, e := range t.projByDatum[dt.code] {
			if e.method == d.method && sameRel(e.unit, d.unit, unitTolerance) && sameParams(e.params, d.params) {
				ok = append(ok, e)
			}
		}
	}
	if len(ok) == 0 {
		return nil
	}
	return slices.MinFunc(ok, preferred)
}
