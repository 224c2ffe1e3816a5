package postgis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/schema"
)

// The apply on one copy of each layer (docs/decisions/0200): the feed's
// layer table <schema>.<name> is where its current features live. A first
// load creates it from staging in one CREATE TABLE … AS, then its key and
// GiST index; a later snapshot is diffed against it by (feature_id,
// ingestd_hash) and written into it; a snapshot whose schema changed the
// layer's columns first rewrites the layer from itself in the new shape.
// The superseded versions and the change log are those of the generic
// form, rebuilt from the layer's rows (layerPropertiesSQL).
//
// Since migration 43 features is a view of the layer tables: the layer
// table is the only copy the apply writes.

// oneCopyLayer is a one-copy layer table's shape. Its geometry type says
// how it holds a feature's geometry: none ("": no geom column,
// ingestd_geom holds any geometry), "Geometry" (geom holds
// every geometry) or one type (geom holds what the type can; a single
// part promoted to the layer's multi type is flagged, anything else the
// type cannot hold goes to ingestd_geom).
type oneCopyLayer struct {
	// schema and name are the layer's, unquoted; ident the quoted
	// qualified name.
	schema, name, ident string
	cols                []layerColumn
	geometry            string
	// allKeys: every key of the rows written is one of cols (the
	// snapshot's schema has a column for each of its keys).
	allKeys bool
}

// maxLayerAttributes is how many attributes a one-copy layer table has
// as columns at most: a table has at most 1,600 columns, dropped ones
// included, and the layer has 10 of its own (feature_id, geom,
// first_seen_at, changed_at, six ingestd_*) and 4 a first load drops
// (OneCopyFirstLoad). A wider layer's other attributes are in each row's
// ingestd_rest.
const maxLayerAttributes = 1600 - 10 - 4

// newOneCopyLayer names the layer table schema.name.
func newOneCopyLayer(schemaName, name string) oneCopyLayer {
	return oneCopyLayer{schema: schemaName, name: name, ident: pgx.Identifier{schemaName, name}.Sanitize()}
}

// shapeFromSchema gives l the columns and geometry of the snapshot's
// schema snap, as its first maxLayerAttributes attributes become columns.
// whole: the table is written whole (first load, reshape) and each double
// precision column renders at the scale its numbers share in profile;
// otherwise at stored (the scale the table was written at, by name).
// A column is exact when every value profile counted for it gives back.
func (l *oneCopyLayer) shapeFromSchema(snap schema.Schema, profile *schema.Profile, stored map[string]*int, whole bool) {
	names := make([]string, len(snap.Columns))
	for i, c := range snap.Columns {
		names[i] = c.Name
	}
	viewCols := schema.ViewColumns(names)
	n := min(len(snap.Columns), maxLayerAttributes)
	byName := make(map[string]*schema.ColumnProfile, len(profile.Columns))
	for i := range profile.Columns {
		byName[profile.Columns[i].Name] = &profile.Columns[i]
	}
	l.cols = make([]layerColumn, n)
	for i, c := range snap.Columns[:n] {
		lc := layerColumn{name: c.Name, column: viewCols[i], typ: c.Type}
		cp := byName[c.Name]
		if cp == nil {
			cp = &schema.ColumnProfile{Name: c.Name}
		}
		scale, scaled := doubleScale(cp, c.Type)
		if !whole {
			s := stored[c.Name]
			lc.scaled = s != nil && c.Type == schema.Double
			if lc.scaled {
				lc.scale = *s
			}
			// The poll's numbers give back at the stored scale only if
			// they share it.
			scaled = scaled && lc.scaled && scale == lc.scale
		} else {
			lc.scaled, lc.scale = scaled, scale
		}
		lc.exact = columnGivesBack(cp, c.Type) && (c.Type != schema.Double || scaled || !hasNumbers(cp))
		l.cols[i] = lc
	}
	l.geometry = snap.Geometry
	l.allKeys = len(snap.Columns) <= maxLayerAttributes
}

// hasNumbers reports whether the profile counted numbers for a column.
func hasNumbers(cp *schema.ColumnProfile) bool {
	return cp.Kinds[schema.KInt]+cp.Kinds[schema.KNum] > 0
}

// inexact marks every column inexact and no key set complete: the rows
// written come with no profile (a reshape rewrites stored rows).
func (l oneCopyLayer) inexact() oneCopyLayer {
	cols := make([]layerColumn, len(l.cols))
	for i, c := range l.cols {
		c.exact = false
		cols[i] = c
	}
	l.cols, l.allKeys = cols, false
	return l
}

// multiTypes are the geometry types whose single part a layer promotes.
var multiTypes = map[string]bool{"MultiPoint": true, "MultiLineString": true, "MultiPolygon": true}

// hasGeom reports whether the layer has a geom column.
func (l oneCopyLayer) hasGeom() bool { return l.geometry != "" }

// asGeometrySQL is the layer's geometry type applied to r.g (x.tg).
func (l oneCopyLayer) asGeometrySQL() string {
	switch l.geometry {
	case "":
		return "NULL::geometry"
	case "Geometry":
		return "r.g"
	}
	return fmt.Sprintf("ingestd_as_geometry(r.g, %s)", quoteLiteral(strings.ToUpper(l.geometry)))
}

// rowColumns are the layer table's columns, in the order rowSQL gives
// their values.
func (l oneCopyLayer) rowColumns() []string {
	out := []string{"feature_id"}
	for _, c := range l.cols {
		out = append(out, pgx.Identifier{c.column}.Sanitize())
	}
	if l.hasGeom() {
		out = append(out, "geom")
	}
	return append(out, "first_seen_at", "changed_at", "ingestd_poll", "ingestd_hash", "ingestd_rest",
		"ingestd_absent", "ingestd_geom_single", "ingestd_geom")
}

// rowSQL is the select list of a layer row from t (feature_id, props,
// first_seen_at, changed_at, ingestd_poll, ingestd_hash), r.g (the
// geometry as stored) and x.tg (asGeometrySQL); plain casts the columns
// whose values convert by plain cast (typedSQL).
func (l oneCopyLayer) rowSQL(plain map[string]bool) string {
	out := []string{"t.feature_id"}
	for _, c := range l.cols {
		out = append(out, typedSQL(c, "t.props", plain[c.name])+" AS "+pgx.Identifier{c.column}.Sanitize())
	}
	// ingestd_geom is EWKB, not a geometry: a second geometry column
	// would be a second layer to QGIS (geometry_columns lists each).
	single, other := "NULL::boolean", "NULL::bytea"
	switch {
	case !l.hasGeom():
		other = "ST_AsEWKB(r.g)"
	case l.geometry != "Geometry":
		out = append(out, fmt.Sprintf("x.tg::geometry(%s, 4326) AS geom", l.geometry))
		if multiTypes[l.geometry] {
			single = "CASE WHEN GeometryType(x.tg) <> GeometryType(r.g) AND GeometryType(x.tg) = 'MULTI' || GeometryType(r.g) THEN true END"
		}
		other = "CASE WHEN r.g IS NOT NULL AND (x.tg IS NULL OR (GeometryType(x.tg) <> GeometryType(r.g) AND GeometryType(x.tg) <> 'MULTI' || GeometryType(r.g))) THEN ST_AsEWKB(r.g) END"
	default:
		out = append(out, "r.g::geometry(Geometry, 4326) AS geom")
	}
	return strings.Join(append(out, "t.first_seen_at", "t.changed_at", "t.ingestd_poll", "t.ingestd_hash",
		layerRestOfSQL("t.props", layerRestSQL("t.props", l.cols, l.allKeys))+" AS ingestd_rest",
		"CASE WHEN jsonb_typeof(t.props) = 'object' THEN "+layerAbsentSQL("t.props", l.cols)+" END AS ingestd_absent",
		single+" AS ingestd_geom_single", other+" AS ingestd_geom"), ",\n\t")
}

// updateSQL is the SET list of an upsert of the layer's values (not its
// key, first_seen_at, changed_at nor ingestd_poll).
func (l oneCopyLayer) updateSQL() string {
	var out []string
	for _, c := range l.rowColumns() {
		switch c {
		case "feature_id", "first_seen_at", "changed_at", "ingestd_poll":
			continue
		}
		out = append(out, c+" = excluded."+c)
	}
	return strings.Join(out, ", ")
}

// storedGeomSQL is the geometry of the layer row o as the source's
// feature had it stored (the generic form's geom).
func (l oneCopyLayer) storedGeomSQL() string {
	if !l.hasGeom() {
		return "ST_GeomFromEWKB(o.ingestd_geom)"
	}
	return "CASE WHEN o.ingestd_geom IS NOT NULL THEN ST_GeomFromEWKB(o.ingestd_geom) WHEN o.ingestd_geom_single THEN ST_GeometryN(o.geom, 1) ELSE o.geom::geometry END"
}

// anyGeomSQL is the row f's geometry, in whichever column it is.
func (l oneCopyLayer) anyGeomSQL() string {
	if !l.hasGeom() {
		return "ST_GeomFromEWKB(f.ingestd_geom)"
	}
	return "coalesce(ST_GeomFromEWKB(f.ingestd_geom), f.geom::geometry)"
}

// typedSQL is the value of column c from p (the properties' jsonb): the
// safe cast, or with plain the plain cast of the value's text, which gives
// the same for a value that converts and costs a fraction of it
// (migration 36).
func typedSQL(c layerColumn, p string, plain bool) string {
	v := fmt.Sprintf("(%s -> %s)", p, quoteLiteral(c.name))
	if !plain {
		return fmt.Sprintf("%s(%s)", castFuncs[c.typ], v)
	}
	t := fmt.Sprintf("(%s ->> %s)", p, quoteLiteral(c.name))
	switch c.typ {
	case schema.Text:
		return t
	case schema.Double:
		return t + "::numeric::double precision"
	}
	return fmt.Sprintf("%s::%s", t, c.typ)
}

// sql is query name with the layer's placeholders filled (sql/onecopy.sql).
func (l oneCopyLayer) sql(name string, plain map[string]bool) string {
	short := l.name
	if len(short) > 50 {
		short = short[:50]
	}
	return strings.NewReplacer(
		"{{layer}}", l.ident,
		"{{layer_new}}", pgx.Identifier{l.schema, trimName(l.name, 40) + "_ingestd_new"}.Sanitize(),
		"{{layer_pkey}}", pgx.Identifier{short + "_feature_id"}.Sanitize(),
		"{{layer_geom}}", pgx.Identifier{short + "_geom"}.Sanitize(),
		"{{schema}}", pgx.Identifier{l.schema}.Sanitize(),
		"{{history}}", historyTable(l.schema),
		"{{row_cols}}", strings.Join(l.rowColumns(), ", "),
		"{{row_exprs}}", l.rowSQL(plain),
		"{{row_update}}", l.updateSQL(),
		"{{as_geometry}}", l.asGeometrySQL(),
		"{{old_props}}", layerPropertiesSQL("o", l.cols),
		"{{old_geom}}", l.storedGeomSQL(),
		"{{any_geom}}", l.anyGeomSQL(),
	).Replace(sqlQuery(name))
}

// historyTableName is the table of a jurisdiction's schema that holds its
// feeds' superseded versions (migration 46); config reserves layer names
// that begin with "ingestd_".
const historyTableName = "ingestd_history"

// historyTable is the history table of schemaName, quoted.
func historyTable(schemaName string) string {
	return pgx.Identifier{schemaName, historyTableName}.Sanitize()
}

// trimName is name cut to at most n bytes.
func trimName(name string, n int) string {
	if len(name) > n {
		return name[:n]
	}
	return name
}

// genericSelect is the select that rebuilds the layer's rows in the
// generic form (feature_id, geom, properties, content_hash,
// first_seen_at, changed_at, poll_id): feed_layers.select_sql of a
// one-copy layer.
func (l oneCopyLayer) genericSelect() string {
	return fmt.Sprintf("SELECT o.feature_id, %s AS geom, %s AS properties, o.ingestd_hash AS content_hash, "+
		"o.first_seen_at, o.changed_at, o.ingestd_poll AS poll_id FROM %s o",
		l.storedGeomSQL(), layerPropertiesSQL("o", l.cols), l.ident)
}

// oneCopyState is what the one-copy steps of an apply find.
type oneCopyState struct {
	layer oneCopyLayer
	// stored is the layer as it was last written (its columns' scales by
	// name, its shape); reshaped: this apply rewrote it in a new shape.
	stored   oneCopyLayer
	scales   map[string]*int
	reshaped bool
	// whole: the table was written whole here (first load, reshape):
	// its columns' scales are recorded.
	whole bool
	// retype, unless nil, is the JSON of the types the decoder now types
	// text values by (property → type), which the reshape retypes the
	// stored values by (retypeOf).
	retype []byte
	// history: the layer's schema has its history table.
	history bool
}

// retypeOf is the JSON of the types the decoder typed this snapshot's
// text values by, when the stored values were typed by others (the first
// poll after a declared type became a number): the stored rows must be
// retyped so that unchanged features keep matching. nil otherwise.
func retypeOf(r *applyRun) []byte {
	want := typedByDecoder(r)
	if !r.sch.known || want == nil || maps.Equal(want, r.sch.typedValues) {
		return nil
	}
	b, err := json.Marshal(want)
	if err != nil {
		return nil
	}
	return b
}

// applyOneCopy is applySnapshot on the one-copy layout.
func (s *Store) applyOneCopy(ctx context.Context, r *applyRun) error {
	for _, step := range []applyStep{
		countInvalidFeatures,
		findLayer,
		readHistory,
		s.readSchema,
		s.oneCopyFirstLoad,
		s.oneCopyCheckUnchanged,
		s.oneCopyDiff,
		tally,
		supersedeHeld,
		markHistoryGap,
		readAsGeneric,
		s.conformCommon,
		s.recordSchema,
	} {
		if err := step(ctx, r); err != nil {
			return err
		}
	}
	if r.held != nil {
		return recordHeld(ctx, r)
	}
	if r.firstLoad {
		if err := s.atLoadStep(ctx, r.tx, "loaded"); err != nil {
			return err
		}
	}
	return s.recordApplied(ctx, r)
}

// readAsGeneric points the reads of the feed's rows that follow the
// write (the conform into a common layer) at the layer's rows rebuilt in
// the generic form.
func readAsGeneric(_ context.Context, r *applyRun) error {
	r.table.readAs = "(" + r.oc.layer.genericSelect() + ")"
	return nil
}

// findLayer looks up the feed's layer table (lookupLayer) and the
// poll's size, and whether the poll is a delta of it; then it sets the
// planner for the bulk statements that follow (planForBulk).
func findLayer(ctx context.Context, r *applyRun) error {
	var err error
	r.table, r.oc, err = lookupLayer(ctx, r.tx, r.pollID, r.jurisdiction, r.feed)
	if err == nil && !r.table.exists {
		if moved, err := moveLayer(ctx, r); err != nil || moved {
			if err != nil {
				return err
			}
			r.table, r.oc, err = lookupLayer(ctx, r.tx, r.pollID, r.jurisdiction, r.feed)
			if err != nil {
				return err
			}
			if err := recordLayer(ctx, r.tx, r, r.oc.stored); err != nil {
				return err
			}
		}
	}
	if err != nil {
		return err
	}
	// Bulk planning only from here: the lookups above find a catalog row
	// by key, which a plan without nested loops does by hashing whole
	// catalogs (in parallel workers, at thousands of layers).
	if err := planForBulk(ctx, r); err != nil {
		return err
	}
	r.firstLoad = !r.table.exists
	if r.firstLoad {
		return nil
	}
	if !r.oc.history {
		// A schema made before its history table was (by a user, or
		// restored without it): the writes below need it.
		if err := ensureLayerSchema(ctx, r); err != nil {
			return err
		}
		r.oc.history = true
	}
	if err := r.tx.QueryRow(ctx, sqlQuery("IsDelta"), r.pollID).Scan(&r.delta); err != nil || !r.delta {
		return err
	}
	// Every statement of a delta's apply joins a few ids with the layer.
	_, err = r.tx.Exec(ctx, sqlQuery("IndexJoinsPlanner"))
	return err
}

// moveLayer moves the feed's layer table to the layer's name when the
// feed's layer was renamed (name, schema in its configuration): the table
// is the feed's features, and goes where the layer now is.
func moveLayer(ctx context.Context, r *applyRun) (bool, error) {
	var old []string
	err := r.tx.QueryRow(ctx, sqlQuery("OneCopyMovedLayer"), r.jurisdiction, r.feed).Scan(&old)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && old == nil) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	to := r.oc.layer
	if err := ensureLayerSchema(ctx, r); err != nil {
		return false, err
	}
	var stmts []string
	if old[0] != to.schema {
		stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s SET SCHEMA %s",
			pgx.Identifier{old[0], old[1]}.Sanitize(), pgx.Identifier{to.schema}.Sanitize()))
	}
	if old[1] != to.name {
		stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s RENAME TO %s",
			pgx.Identifier{to.schema, old[1]}.Sanitize(), pgx.Identifier{to.name}.Sanitize()))
	}
	for _, q := range stmts {
		if _, err := r.tx.Exec(ctx, q); err != nil {
			return false, fmt.Errorf("move layer %s.%s to %s: %w", old[0], old[1], to.ident, err)
		}
	}
	if old[0] != to.schema {
		// The feed's history goes with its layer: its readers find it in
		// the layer's schema.
		var oldHistory bool
		if err := r.tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", historyTable(old[0])).Scan(&oldHistory); err != nil {
			return false, err
		}
		if oldHistory {
			q := strings.Replace(to.sql("OneCopyMoveHistory", nil), "{{old_history}}", historyTable(old[0]), 1)
			if _, err := r.tx.Exec(ctx, q, r.feed); err != nil {
				return false, fmt.Errorf("move the history of %s/%s from schema %s to %s: %w", r.jurisdiction, r.feed, old[0], to.schema, err)
			}
		}
	}
	return true, nil
}

// lookupLayer finds the feed's layer table: the feed's
// table is its layer, and reads of its rows (readAs) read them rebuilt in
// the generic form. The state holds the layer as it was last written.
func lookupLayer(ctx context.Context, tx pgx.Tx, pollID int64, jurisdiction, feed string) (feedTable, oneCopyState, error) {
	var names []string
	var oc oneCopyState
	t := feedTable{feedJurisdiction: jurisdiction, feedName: feed}
	if err := tx.QueryRow(ctx, sqlQuery("OneCopyLookup"), pollID, jurisdiction, feed).
		Scan(&t.exists, &names, &t.staged, &t.lastCount, &t.lastQuiet, &oc.history); err != nil {
		return t, oc, err
	}
	oc.layer = newOneCopyLayer(names[0], names[1])
	t.name = names[1]
	if !t.exists {
		return t, oc, nil
	}
	st, scales, err := readLayerShape(ctx, tx, jurisdiction, feed, oc.layer)
	if err != nil {
		return t, oc, err
	}
	oc.stored, oc.layer, oc.scales = st, st, scales
	t.readAs = "(" + st.genericSelect() + ")"
	return t, oc, nil
}

// tableOf is the feed's layer table, for the steps that need only its
// handle.
func (s *Store) tableOf(ctx context.Context, tx pgx.Tx, pollID int64, jurisdiction, feed string) (feedTable, error) {
	t, _, err := lookupLayer(ctx, tx, pollID, jurisdiction, feed)
	return t, err
}

// readLayerShape reads the shape the layer table l was written in
// (feed_columns, with the scales by name).
func readLayerShape(ctx context.Context, tx pgx.Tx, jurisdiction, feed string, l oneCopyLayer) (oneCopyLayer, map[string]*int, error) {
	rows, err := tx.Query(ctx, sqlQuery("OneCopyStoredColumns"), jurisdiction, feed)
	if err != nil {
		return l, nil, err
	}
	l.cols = nil
	scales := map[string]*int{}
	n := 0
	for rows.Next() {
		var c layerColumn
		var scale *int
		var geometry string
		if err := rows.Scan(&c.name, &c.column, &c.typ, &scale, &geometry); err != nil {
			rows.Close()
			return l, nil, err
		}
		n++
		l.geometry = geometry
		scales[c.name] = scale
		if scale != nil && c.typ == schema.Double {
			c.scaled, c.scale = true, *scale
		}
		if len(l.cols) < maxLayerAttributes {
			l.cols = append(l.cols, c)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return l, nil, err
	}
	if n == 0 {
		if err := tx.QueryRow(ctx, sqlQuery("OneCopyStoredGeometry"), jurisdiction, feed).Scan(&l.geometry); err != nil {
			return l, nil, err
		}
	}
	l.allKeys = n <= maxLayerAttributes
	return l, scales, nil
}

// plainColumnsOf names the layer's columns whose values in profile all
// convert to their type by a plain cast (timestamptz and jsonb keep the
// safe cast: a zone beyond ±15:59 is a timestamp to schema.Converts but
// not to PostgreSQL; jsonb's is cheap).
func plainColumnsOf(l oneCopyLayer, profile *schema.Profile) map[string]bool {
	m := map[string]bool{}
	for _, c := range l.cols {
		if c.typ != schema.JSON && c.typ != schema.Timestamp && profile.AllConvert(c.name, c.typ) {
			m[c.name] = true
		}
	}
	return m
}

// oneCopyFirstLoad creates the feed's layer table from the poll's staging
// (see oneCopyLoad), in a savepoint: a held snapshot, a repeated id or a
// failed cast leaves nothing of it.
func (s *Store) oneCopyFirstLoad(ctx context.Context, r *applyRun) error {
	if !r.firstLoad || r.held != nil {
		return nil
	}
	if !r.sch.known {
		return fmt.Errorf("the poll's pages have no profile: its layer's columns are unknown")
	}
	r.oc.layer.shapeFromSchema(r.sch.snap, &r.sch.profile, nil, true)
	r.oc.whole = true
	if err := ensureLayerSchema(ctx, r); err != nil {
		return err
	}
	var taken bool
	if err := r.tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", r.oc.layer.ident).Scan(&taken); err != nil {
		return err
	}
	if taken {
		// Not the feed's (it has no content hash): a table or view of
		// someone else's, which the load must not replace.
		return fmt.Errorf("the feed's layer %s is taken by a relation that is not ingestd's layer table: "+
			"rename or drop it, or give the feed another layer name (layer_schema, layer_name)", r.oc.layer.ident)
	}
	// A plain cast that meets a value it does not take, a repeated id (the
	// key), a coordinate outside its CRS's domain: the load again, without
	// what failed.
	v := loadVariant{plain: true}
	s.bulkLoads.Add(1)
	for try := 0; ; try++ {
		if try > 0 {
			s.bulkFallbacks.Add(1)
		}
		err := s.oneCopyLoad(ctx, r, v)
		var pgErr *pgconn.PgError
		switch {
		case err == nil:
			return nil
		case !v.dedupe && errors.As(err, &pgErr) && pgErr.Code == "23505":
			v.dedupe = true
		case !v.safeTransform && isTransformError(err):
			v.safeTransform = true
		case v.plain && errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "22"):
			v.plain = false
		case len(r.oc.layer.cols) > 0 && errors.As(err, &pgErr) && pgErr.Code == "54000":
			// Its rows would not fit a page as columns: a layer of
			// feature_id and geom, every attribute in the rows' rest.
			r.oc.layer.cols, r.oc.layer.allKeys = nil, false
		default:
			return err
		}
	}
}

// loadVariant is how oneCopyLoad reads staging: plain casts, only each
// id's last row, transforms that give a failing geometry no value.
type loadVariant struct{ plain, dedupe, safeTransform bool }

// ensureLayerSchema creates the jurisdiction's schema for its first layer,
// with its staging and history tables, unless its history table exists.
func ensureLayerSchema(ctx context.Context, r *applyRun) error {
	var exists bool
	if err := r.tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL",
		historyTable(r.oc.layer.schema)).Scan(&exists); err != nil || exists {
		return err
	}
	if err := ensureJurisdictionTables(ctx, r.tx, r.oc.layer.schema); err != nil {
		return fmt.Errorf("the layer of %s/%s: %w", r.jurisdiction, r.feed, err)
	}
	return nil
}

// oneCopyLoad is one attempt of a first load in a savepoint: CREATE TABLE
// … AS over staging, its counts and the extent guard, the key, and unless
// held the skipped rows deleted, the load columns dropped, the GiST index,
// the change log, the layer's catalog row and comment.
func (s *Store) oneCopyLoad(ctx context.Context, r *applyRun, v loadVariant) error {
	sp, err := r.tx.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = sp.Rollback(ctx) }()
	l := r.oc.layer
	var plain map[string]bool
	if v.plain {
		plain = plainColumnsOf(l, &r.sch.staged)
	}
	create := l.sql("OneCopyFirstLoad", plain)
	dedupe := ""
	if v.dedupe {
		dedupe = sqlQuery("OneCopyDedupe")
	}
	create = strings.Replace(create, "{{dedupe}}", dedupe, 1)
	if v.safeTransform {
		create = safeTransforms(create)
	}
	if _, err := sp.Exec(ctx, sqlQuery("BulkPlanner")); err != nil {
		return err
	}
	// The transaction's time, read here and passed: on Citus the load
	// runs on the worker that holds the jurisdiction's staging and layer,
	// whose now() is its own transaction's, later than the poll's.
	var at time.Time
	if err := sp.QueryRow(ctx, "SELECT now()").Scan(&at); err != nil {
		return err
	}
	if _, err := sp.Exec(ctx, create, pgx.QueryExecModeDescribeExec, r.pollID, r.skipInvalidFeature, at); err != nil {
		return err
	}
	var rows, invalid, skipped, named int
	var verdict *string
	if err := sp.QueryRow(ctx, l.sql("OneCopyCounts", nil), pgx.QueryExecModeDescribeExec, r.bbox, r.accept).
		Scan(&rows, &invalid, &skipped, &named, &verdict); err != nil {
		return err
	}
	if _, err := sp.Exec(ctx, sqlQuery("BulkPlannerReset")); err != nil {
		return err
	}
	if err := s.buildKey(ctx, sp, l); err != nil {
		return err
	}
	if err := s.atLoadStep(ctx, r.tx, "bulk keyed"); err != nil {
		return err
	}
	r.held = verdict
	r.out.res = feeds.ApplyResult{Features: rows, Added: rows, InvalidGeometries: invalid}
	if err := sp.QueryRow(ctx, sqlQuery("BulkPagesAndSplit"), r.pollID, named).Scan(&r.pages, &r.split); err != nil {
		return err
	}
	if err := checkSplit(ctx, r); err != nil || r.held != nil {
		return err
	}
	if (r.skipInvalid && invalid > 0) || skipped > 0 {
		tag, err := sp.Exec(ctx, l.sql("OneCopyDeleteSkipped", nil), r.skipInvalid)
		if err != nil {
			return err
		}
		r.out.res.Added -= int(tag.RowsAffected())
	}
	steps := []string{"OneCopyDropLoadColumns"}
	if l.hasGeom() {
		steps = append(steps, "OneCopyGeomIndex")
	}
	for _, name := range steps {
		if _, err := sp.Exec(ctx, l.sql(name, nil)); err != nil {
			return err
		}
	}
	if _, err := sp.Exec(ctx, l.sql("OneCopyChangeLog", nil), r.pollID, r.jurisdiction, r.feed); err != nil {
		return err
	}
	if err := recordLayer(ctx, sp, r, l); err != nil {
		return err
	}
	return sp.Commit(ctx)
}

// buildKey drops the load's named column, sets the NOT NULLs and builds
// the key of a first load's layer table: one ALTER (one scan), or two
// where the database runs ADD CONSTRAINT only alone (onCitus).
func (s *Store) buildKey(ctx context.Context, tx pgx.Tx, l oneCopyLayer) error {
	split, err := s.onCitus(ctx, tx)
	if err != nil {
		return err
	}
	steps := []string{"OneCopyBuildKey"}
	if split {
		steps = []string{"OneCopyBuildKeyColumns", "OneCopyBuildKeyOnly"}
	}
	for _, name := range steps {
		if _, err := tx.Exec(ctx, l.sql(name, nil)); err != nil {
			return err
		}
	}
	return nil
}

// onCitus tells whether the database is a Citus coordinator (the citus
// extension installed; asked once per store, a pool's database), or a test
// makes the store act as on one (SetCitus). There a first load builds the
// layer's key in an ALTER of its own, and the large unchanged check, which
// joins the layer on a worker with staging on the coordinator, is left to
// the diff.
func (s *Store) onCitus(ctx context.Context, tx pgx.Tx) (bool, error) {
	switch s.citus.Load() {
	case citusYes:
		return true, nil
	case citusNo:
		return false, nil
	}
	var citus bool
	if err := tx.QueryRow(ctx, sqlQuery("OneCopyCitus")).Scan(&citus); err != nil {
		return false, err
	}
	mode := citusNo
	if citus {
		mode = citusYes
	}
	s.citus.CompareAndSwap(citusUnknown, mode)
	return citus, nil
}

// Whether the store's database is a Citus coordinator (Store.citus).
const (
	citusUnknown int32 = iota
	citusNo
	citusYes
)

// recordLayer writes the layer's catalog row (feed_layers) and comment.
func recordLayer(ctx context.Context, tx pgx.Tx, r *applyRun, l oneCopyLayer) error {
	if _, err := tx.Exec(ctx, sqlQuery("OneCopyRecordLayer"), r.jurisdiction, r.feed, l.ident, l.genericSelect()); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, fmt.Sprintf("COMMENT ON TABLE %s IS %s", l.ident, quoteLiteral(fmt.Sprintf(
		"Layer of feed %s/%s (ingestd): one column per attribute (feed_columns), geom in EPSG:4326, key feature_id; "+
			"the feed's current features, kept by each apply; ingestd_* columns are its bookkeeping.", r.jurisdiction, r.feed))))
	return err
}

// oneCopyCheckUnchanged is checkUnchanged on the layer table.
func (s *Store) oneCopyCheckUnchanged(ctx context.Context, r *applyRun) error {
	if r.firstLoad || r.held != nil {
		return nil
	}
	l := r.oc.stored
	if r.table.staged > s.smallSnapshot {
		t := r.table
		if !s.largeUnchangedCheck || t.staged != t.lastCount || !t.lastQuiet {
			return nil
		}
		// On Citus the diff decides: this check's parallel join of staging
		// with the layer has not been tried there since both moved to the
		// schema's worker (before, Citus refused it: "direct joins between
		// distributed and local tables").
		if citus, err := s.onCitus(ctx, r.tx); err != nil || citus {
			return err
		}
		s.largeChecks.Add(1)
		if _, err := r.tx.Exec(ctx, sqlQuery("UnchangedLargePlanner")); err != nil {
			return err
		}
		var current, matched int
		if err := r.tx.QueryRow(ctx, l.sql("OneCopyUnchangedLarge", nil), pgx.QueryExecModeDescribeExec,
			r.pollID).Scan(&r.pages, &current, &matched); err != nil {
			return err
		}
		if _, err := r.tx.Exec(ctx, sqlQuery("UnchangedLargePlannerReset")); err != nil {
			return err
		}
		if int64(current) != t.staged || matched != current {
			return nil
		}
		s.largeUnchanged.Add(1)
		zero := 0
		r.unchanged, r.checked, r.split = true, true, &zero
		r.out.res = feeds.ApplyResult{Features: current, Unchanged: current}
		r.out.previous = current
		return nil
	}
	var features, changed, current int
	if err := r.tx.QueryRow(ctx, l.sql("OneCopyUnchanged", nil), pgx.QueryExecModeDescribeExec,
		r.pollID).Scan(&r.pages, &features, &changed, &current, &r.split); err != nil {
		return err
	}
	r.checked = true
	if changed == 0 && current == features {
		r.unchanged = true
		r.out.res = feeds.ApplyResult{Features: features, Unchanged: features}
		r.out.previous = current
	}
	return checkSplit(ctx, r)
}

// oneCopyDiff diffs the snapshot against the layer table and writes the
// difference (OneCopyDiff, OneCopyDelta), first rewriting the layer in
// the snapshot's shape when its columns or geometry type differ from it
// (reshape; an unchanged snapshot too), all in a savepoint that a held
// snapshot rolls back.
func (s *Store) oneCopyDiff(ctx context.Context, r *applyRun) error {
	if r.firstLoad || r.held != nil {
		return nil
	}
	sp, err := r.tx.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = sp.Rollback(ctx) }()
	l, err := s.shapeForWrite(ctx, sp, r)
	if err != nil {
		return err
	}
	r.oc.layer = l
	if r.unchanged {
		// Nothing to write; a layer that could not take its shape
		// before (a user's view) takes it now.
		return sp.Commit(ctx)
	}
	res := &r.out.res
	name := "OneCopyDiff"
	if r.delta {
		name = "OneCopyDelta"
	}
	args := []any{r.pollID, r.jurisdiction, r.feed, r.accept, r.maxShrink, r.bbox, r.skipInvalid, r.skipInvalidFeature,
		r.keepHistory}
	dest := []any{&res.Features, &res.Added, &res.Modified, &res.Unchanged, &res.Removed,
		&r.pages, &r.out.previous, &r.held, &res.InvalidGeometries, &r.split, &r.fetched}
	// Every row written was staged: the columns whose staged values all
	// convert are read with plain casts (a fraction of the safe casts'
	// cost); should one meet a value it does not take, the safe casts.
	var plain map[string]bool
	if r.sch.known {
		plain = plainColumnsOf(l, &r.sch.staged)
	}
	err = runApply(ctx, sp, l.sql(name, plain), args, dest...)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "22") {
		err = runApply(ctx, sp, l.sql(name, nil), args, dest...)
	}
	if err != nil {
		return err
	}
	if !r.checked {
		if err := checkSplit(ctx, r); err != nil {
			return err
		}
	}
	if r.held != nil {
		r.oc.reshaped, r.oc.whole = false, false
		return sp.Rollback(ctx)
	}
	return sp.Commit(ctx)
}

// shapeForWrite is the layer the run's rows are written in: the stored
// one, or, when the snapshot's schema differs from it (or stored values
// must be retyped), the snapshot's shape after rewriting the layer in it
// (tryReshape); a layer that cannot take it keeps its own, every column
// then inexact.
func (s *Store) shapeForWrite(ctx context.Context, sp pgx.Tx, r *applyRun) (oneCopyLayer, error) {
	if !r.sch.known {
		return r.oc.stored, nil
	}
	want := r.oc.layer
	want.shapeFromSchema(r.sch.snap, &r.sch.staged, r.oc.scales, false)
	retype := retypeOf(r)
	if retype == nil && sameShape(want, r.oc.stored) {
		return want, nil
	}
	r.oc.retype = retype
	whole := r.oc.layer
	whole.shapeFromSchema(r.sch.snap, &r.sch.profile, nil, true)
	reshaped, err := s.tryReshape(ctx, sp, r, whole)
	if err != nil || !reshaped {
		// The layer keeps its shape: every value its columns do not
		// give back, and every key that is no column, goes to the
		// rows' rest.
		return r.oc.stored.inexact(), err
	}
	r.oc.reshaped, r.oc.whole = true, true
	scales := map[string]*int{}
	for _, c := range whole.cols {
		if c.scaled {
			scales[c.name] = &c.scale
		}
	}
	want = r.oc.layer
	want.shapeFromSchema(r.sch.snap, &r.sch.staged, scales, false)
	return want, nil
}

// sameShape reports whether two layers have the same columns (names,
// types, scales) and geometry type: a write of one is a write of the
// other.
func sameShape(a, b oneCopyLayer) bool {
	if a.geometry != b.geometry || len(a.cols) != len(b.cols) {
		return false
	}
	for i := range a.cols {
		x, y := a.cols[i], b.cols[i]
		if x.name != y.name || x.column != y.column || x.typ != y.typ || x.scaled != y.scaled || (x.scaled && x.scale != y.scale) {
			return false
		}
	}
	return true
}

// errKeepShape is how reshape says the layer cannot take its new shape:
// a user's view depends on it, or its rows would not fit a page.
var errKeepShape = errors.New("the layer keeps its shape")

// tryReshape rewrites the layer in the shape of l (reshape) in a
// savepoint. When it cannot, the layer keeps its shape and the apply goes
// on (reshaped false): a user's view on a layer does not make its polls
// fail, and the next apply tries again.
func (s *Store) tryReshape(ctx context.Context, tx pgx.Tx, r *applyRun, l oneCopyLayer) (reshaped bool, err error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = sp.Rollback(ctx) }()
	err = reshape(ctx, sp, r, l)
	if errors.Is(err, errKeepShape) {
		s.logger.WarnContext(ctx, "layer keeps its columns", "poll_id", r.pollID, "jurisdiction", r.jurisdiction,
			"feed", r.feed, "reason", err.Error())
		return false, sp.Rollback(ctx)
	}
	if err != nil {
		return false, err
	}
	return true, sp.Commit(ctx)
}

// reshape rewrites the layer table from itself in the shape of l
// (OneCopyReshape): the old table's rows rebuilt in the generic form and
// typed anew, or, when l only adds columns and nothing is retyped,
// copied with the new columns read from their rest (OneCopyReshapeAdd,
// copyRowSQL); then swapped in with its key, GiST index and catalog row. A
// user's view on the old table is a dependent the swap cannot keep, and a
// row wider than a page cannot be written: errKeepShape.
func reshape(ctx context.Context, tx pgx.Tx, r *applyRun, l oneCopyLayer) error {
	old := r.oc.stored
	var deps *string
	if err := tx.QueryRow(ctx, sqlQuery("OneCopyDependents"), old.ident).Scan(&deps); err != nil {
		return err
	}
	if deps != nil {
		return fmt.Errorf("%w: %s depends on layer %s", errKeepShape, *deps, old.ident)
	}
	newName := trimName(l.name, 40) + "_ingestd_new"
	name, copyExprs := "OneCopyReshape", ""
	if added, ok := addedColumns(old, l); ok && r.oc.retype == nil {
		name, copyExprs = "OneCopyReshapeAdd", l.copyRowSQL(added)
	}
	q := strings.NewReplacer(
		"{{layer}}", old.ident,
		"{{layer_new}}", pgx.Identifier{l.schema, newName}.Sanitize(),
		"{{row_exprs}}", l.inexact().rowSQL(nil),
		"{{copy_exprs}}", copyExprs,
		"{{as_geometry}}", l.asGeometrySQL(),
		"{{old_props}}", layerPropertiesSQL("o", old.cols),
		"{{old_geom}}", old.storedGeomSQL(),
	).Replace(sqlQuery(name))
	if _, err := tx.Exec(ctx, fmt.Sprintf("DROP TABLE IF EXISTS %s", pgx.Identifier{l.schema, newName}.Sanitize())); err != nil {
		return err
	}
	var args []any
	if name == "OneCopyReshape" {
		args = append(args, r.oc.retype)
	}
	var pgErr *pgconn.PgError
	if _, err := tx.Exec(ctx, q, append([]any{pgx.QueryExecModeDescribeExec}, args...)...); errors.As(err, &pgErr) && pgErr.Code == "54000" {
		return fmt.Errorf("%w: its rows would not fit a page", errKeepShape)
	} else if err != nil {
		return fmt.Errorf("reshape layer %s: %w", l.ident, err)
	}
	stmts := []string{
		fmt.Sprintf("DROP TABLE %s", old.ident),
		fmt.Sprintf("ALTER TABLE %s RENAME TO %s", pgx.Identifier{l.schema, newName}.Sanitize(), pgx.Identifier{l.name}.Sanitize()),
		l.sql("OneCopyBuildKeyOnly", nil),
	}
	if l.hasGeom() {
		stmts = append(stmts, l.sql("OneCopyGeomIndex", nil))
	}
	for _, q := range stmts {
		if _, err := tx.Exec(ctx, q); err != nil {
			return fmt.Errorf("reshape layer %s: %w", l.ident, err)
		}
	}
	return recordLayer(ctx, tx, r, l)
}

// queueOneCopyScales queues the scales of a layer written whole.
func queueOneCopyScales(b *pgx.Batch, r *applyRun) {
	if !r.oc.whole {
		return
	}
	names := make([]string, len(r.oc.layer.cols))
	scales := make([]*int, len(r.oc.layer.cols))
	for i, c := range r.oc.layer.cols {
		names[i] = c.name
		if c.scaled {
			scales[i] = &c.scale
		}
	}
	b.Queue(sqlQuery("OneCopySetScales"), r.jurisdiction, r.feed, names, scales)
}
