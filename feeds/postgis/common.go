package postgis

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/feeds"
)

// CommonSchema is the schema that holds the common layers' tables, one
// table per layer (common.addresses, …).
const CommonSchema = "common"

// commonPage is how many features the apply conforms between two writes
// of the common layer: the properties of one page are all it holds in
// memory, whatever the size of the feed or of its change.
const commonPage = 2000

// commonCursor and commonStage are the cursor over the feed's features
// and the temporary table of their conformed values while the feed's
// rows are conformed in full.
const (
	commonCursor = "ingestd_common_features"
	commonStage  = "ingestd_common_conformed"
)

// commonLockClass is the first key of the advisory lock taken while a
// common layer's table (and the schema) is created: two feeds conforming
// into a new layer at once would otherwise both try to create it.
const commonLockClass int32 = 0x636f6d6d // "comm"

// commonTable is a common layer's table and the SQL that writes it.
type commonTable struct {
	layer config.CommonLayer
}

// ident is the layer's table, schema-qualified and quoted.
func (c commonTable) ident() string { return pgx.Identifier{CommonSchema, c.layer.Name}.Sanitize() }

// geomType is the typmod of the layer's geom column.
func (c commonTable) geomType() string {
	switch c.layer.Geometry {
	case "point":
		return "Point"
	case "linestring":
		return "LineString"
	case "polygon":
		return "Polygon"
	case "multipoint":
		return "MultiPoint"
	case "multilinestring":
		return "MultiLineString"
	case "multipolygon":
		return "MultiPolygon"
	}
	return "Geometry"
}

// geomExpr is the layer's geometry made of the feed's geometry f.geom,
// computed where the features are read. A
// point layer takes a point on the surface of anything else, as
// batch-machine makes address points of polygons; a multi layer takes a
// single geometry as a multi of one. A geometry of another type gets no
// value rather than failing the apply: the row's columns are still worth
// having.
func (c commonTable) geomExpr() string {
	t := c.geomType()
	switch t {
	case "Geometry":
		return "f.geom"
	case "Point":
		return "CASE WHEN GeometryType(f.geom) = 'POINT' THEN f.geom " +
			"WHEN NOT ST_IsEmpty(f.geom) THEN ST_PointOnSurface(f.geom) END"
	case "MultiPoint", "MultiLineString", "MultiPolygon":
		return fmt.Sprintf("CASE WHEN GeometryType(ST_Multi(f.geom)) = %s THEN ST_Multi(f.geom) END",
			quoteLiteral(strings.ToUpper(t)))
	}
	return fmt.Sprintf("CASE WHEN GeometryType(f.geom) = %s THEN f.geom END", quoteLiteral(strings.ToUpper(t)))
}

// sql returns the named query of sql/common.sql for this layer and the
// feed's table.
func (c commonTable) sql(name string, feedTable feedTable) string {
	var columns, names, values, arrays, aliases, sets, staged, olds, news []string
	for i, col := range c.layer.Columns {
		id := pgx.Identifier{col.Name}.Sanitize()
		typ := col.Type
		if typ == "" {
			typ = "text"
		}
		columns = append(columns, id+" "+typ)
		names = append(names, id)
		values = append(values, fmt.Sprintf("NULLIF(u.k%d, '')::%s", i, typ))
		arrays = append(arrays, fmt.Sprintf("$%d::text[]", i+5))
		aliases = append(aliases, fmt.Sprintf("k%d", i))
		sets = append(sets, id+" = excluded."+id)
		olds, news = append(olds, "t."+id), append(news, "excluded."+id)
		staged = append(staged, fmt.Sprintf("k%d text", i))
	}
	return strings.NewReplacer(
		"{{layer}}", c.ident(),
		"{{index}}", pgx.Identifier{c.layer.Name + "_geom"}.Sanitize(),
		"{{table}}", feedTable.ident(),
		"{{columns}}", strings.Join(columns, ",\n\t"),
		"{{geomtype}}", c.geomType(),
		"{{names}}", strings.Join(names, ", "),
		"{{values}}", strings.Join(values, ", "),
		"{{arrays}}", strings.Join(arrays, ", "),
		"{{aliases}}", strings.Join(aliases, ", "),
		"{{sets}}", strings.Join(sets, ", "),
		"{{olds}}", strings.Join(olds, ", "),
		"{{news}}", strings.Join(news, ", "),
		"{{geom}}", c.geomExpr(),
		"{{stage}}", commonStage,
		"{{stagecolumns}}", strings.Join(staged, ", "),
		"{{cursor}}", commonCursor,
	).Replace(sqlQuery(name))
}

// conformCommon keeps the feed's rows in its common layer as its features
// now are, in the apply's transaction: an apply that fails after this
// leaves the common layer as it was, as it leaves the feed. Only the
// features the poll added or modified (feature_changes) are conformed
// again and those it removed deleted; all of them are when the feed is
// first loaded, its conform or layer changed, or its rows were made
// without the conform at hand. An unchanged snapshot with the same
// conform touches nothing. A feed that lost its conform loses its rows.
//
// The conform runs in Go over the properties read back from the feed's
// table a page at a time (docs/decisions/0154), the geometry is taken in
// SQL as the page is read.
func (s *Store) conformCommon(ctx context.Context, r *applyRun) error {
	if r.held != nil {
		return nil
	}
	var layer, digest string
	err := r.tx.QueryRow(ctx, sqlQuery("CommonFeed"), r.jurisdiction, r.feed).Scan(&layer, &digest)
	had := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if !r.commonKnown {
		// An operator accepted a held snapshot: the configuration is not
		// at hand. The removed features' rows go now (that needs no
		// conform); the rows are conformed in full at the next apply.
		if !had {
			return nil
		}
		if err := deleteRemovedCommonRows(ctx, r, layer); err != nil {
			return err
		}
		_, err := r.tx.Exec(ctx, sqlQuery("StaleCommonFeed"), r.jurisdiction, r.feed)
		return err
	}
	cc := r.common
	if had && (cc == nil || layer != cc.Layer.Name) {
		if err := retireCommonRows(ctx, r.tx, r.jurisdiction, r.feed, layer); err != nil {
			return err
		}
	}
	if cc == nil {
		return nil
	}
	full := r.firstLoad || !had || layer != cc.Layer.Name || digest != cc.Digest
	if !full && r.unchanged {
		return nil
	}
	t := commonTable{layer: cc.Layer}
	if err := ensureCommonTable(ctx, r.tx, t); err != nil {
		return err
	}
	if full {
		if err := conformAllCommon(ctx, r, t, cc); err != nil {
			return err
		}
		return s.recordCommonSkips(ctx, r, t)
	}
	// Each page joins a few thousand ids with the feed's table and the
	// layer's: by index, not by hashing the whole tables page after page.
	if _, err := r.tx.Exec(ctx, sqlQuery("IndexJoinsPlanner")); err != nil {
		return err
	}
	if err := deleteRemovedCommonRows(ctx, r, t.layer.Name); err != nil {
		return err
	}
	if err := conformPages(ctx, r, t, cc, t.sql("ChangedFeaturesPage", r.table)); err != nil {
		return err
	}
	if _, err := r.tx.Exec(ctx, sqlQuery("ApplyPlanner")); err != nil {
		return err
	}
	return s.recordCommonSkips(ctx, r, t)
}

// conformAllCommon replaces all the feed's rows of t. The features are
// read through one cursor with their layer geometry (one scan: no sort,
// no query per page), their conformed values and geometry COPYed into a
// temporary table a page at a time, and the layer written by one
// INSERT … SELECT, not an upsert per page (docs/decisions/0154).
func conformAllCommon(ctx context.Context, r *applyRun, t commonTable, cc *feeds.CommonConform) error {
	if _, err := r.tx.Exec(ctx, t.sql("DeleteCommonRows", r.table), r.jurisdiction, r.feed); err != nil {
		return err
	}
	if _, err := r.tx.Exec(ctx, sqlQuery("RecordCommonFeed"), r.jurisdiction, r.feed, cc.Layer.Name, cc.Digest); err != nil {
		return err
	}
	for _, q := range []string{t.sql("CreateConformedStage", r.table), t.sql("DeclareAllFeatures", r.table)} {
		if _, err := r.tx.Exec(ctx, q, pgx.QueryExecModeExec); err != nil {
			return err
		}
	}
	columns := []string{"feature_id"}
	for i := range cc.Layer.Columns {
		columns = append(columns, fmt.Sprintf("k%d", i))
	}
	columns = append(columns, "g")
	fetch := fmt.Sprintf("FETCH %d FROM %s", commonPage, commonCursor)
	for {
		ids, geoms, values, err := conformRows(ctx, r, cc, fetch, true, pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			return err
		}
		if r.commonSkips.read == 0 {
			break
		}
		if len(ids) == 0 {
			continue
		}
		rows := make([][]any, len(ids))
		for j, id := range ids {
			row := make([]any, 0, len(columns))
			row = append(row, id)
			for i := range values {
				row = append(row, values[i][j])
			}
			row = append(row, geoms[j])
			rows[j] = row
		}
		if _, err := r.tx.CopyFrom(ctx, pgx.Identifier{commonStage}, columns, pgx.CopyFromRows(rows)); err != nil {
			return err
		}
	}
	if _, err := r.tx.Exec(ctx, t.sql("InsertConformedStage", r.table), pgx.QueryExecModeExec, r.jurisdiction, r.feed); err != nil {
		return fmt.Errorf("feed %s/%s: writing its rows of common layer %s: %w", r.jurisdiction, r.feed, t.layer.Name, err)
	}
	_, err := r.tx.Exec(ctx, "CLOSE "+commonCursor+"; DROP TABLE "+commonStage, pgx.QueryExecModeSimpleProtocol)
	return err
}

// conformPages conforms the features query pages through (in feature id
// order) and upserts their rows, a page at a time.
func conformPages(ctx context.Context, r *applyRun, t commonTable, cc *feeds.CommonConform, query string) error {
	upsert := t.sql("UpsertCommonRows", r.table)
	after := ""
	for {
		ids, geoms, values, err := conformRows(ctx, r, cc, query, true,
			pgx.QueryExecModeDescribeExec, r.jurisdiction, r.feed, r.pollID, after, commonPage)
		if err != nil {
			return err
		}
		if len(ids) > 0 {
			args := []any{pgx.QueryExecModeDescribeExec, r.jurisdiction, r.feed, ids, geoms}
			for _, v := range values {
				args = append(args, v)
			}
			if _, err := r.tx.Exec(ctx, upsert, args...); err != nil {
				return fmt.Errorf("feed %s/%s: writing its rows of common layer %s: %w", r.jurisdiction, r.feed, t.layer.Name, err)
			}
		}
		if err := deleteSkippedCommonRows(ctx, r, t); err != nil {
			return err
		}
		if r.commonSkips.read < commonPage {
			return nil
		}
		after = r.commonSkips.last
	}
}

// conformRows reads one page of features (query with args) and conforms
// them: their ids, their geometries as the layer takes them (EWKB, if
// withGeom: the query reads them as its third column), and per layer
// column the values, in the query's order.
func conformRows(ctx context.Context, r *applyRun, cc *feeds.CommonConform, query string, withGeom bool, args ...any) ([]string, [][]byte, [][]string, error) {
	r.commonSkips.newPage()
	rows, err := r.tx.Query(ctx, query, args...)
	if err != nil {
		return nil, nil, nil, err
	}
	defer rows.Close()
	var ids []string
	var geoms [][]byte
	values := make([][]string, len(cc.Layer.Columns))
	for rows.Next() {
		var id string
		var props, g []byte
		dest := []any{&id, &props}
		if withGeom {
			dest = append(dest, &g)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, nil, nil, err
		}
		m, err := decodeProperties(props)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("feed %s/%s: feature %s: reading its properties to conform them: %w",
				r.jurisdiction, r.feed, quoteInput(id), err)
		}
		r.commonSkips.read++
		r.commonSkips.last = id
		out, err := cc.Conform.Apply(m)
		if err == nil {
			err = misfit(out, cc)
		}
		if err != nil {
			r.commonSkips.skip(id, err)
			continue
		}
		ids = append(ids, id)
		geoms = append(geoms, g)
		for i, c := range cc.Layer.Columns {
			values[i] = append(values[i], out[c.Name])
		}
	}
	return ids, geoms, values, rows.Err()
}

// decodeProperties decodes a feature's stored properties with numbers as
// written (json.Number), which conform renders as batch-machine does.
func decodeProperties(b []byte) (map[string]any, error) {
	m := map[string]any{}
	if len(b) == 0 || string(b) == "null" {
		return m, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// ensureCommonTable creates the layer's table and its index unless they
// exist, under an advisory lock so that two applies do not race to.
func ensureCommonTable(ctx context.Context, tx pgx.Tx, t commonTable) error {
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", t.ident()).Scan(&exists); err != nil || exists {
		return err
	}
	// One lock for every layer: the schema is created under it too.
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, hashtext($2))", commonLockClass, CommonSchema); err != nil {
		return err
	}
	for _, q := range []string{sqlQuery("CreateCommonSchema"), t.sql("CreateCommonLayer", feedTable{}),
		t.sql("IndexCommonLayer", feedTable{})} {
		if _, err := tx.Exec(ctx, q, pgx.QueryExecModeExec); err != nil {
			return fmt.Errorf("creating common layer %s: %w", t.layer.Name, err)
		}
	}
	return trackCommonTable(ctx, tx, t)
}

// retireCommonRows deletes the feed's rows from common layer layer and
// forgets that it conformed into it.
func retireCommonRows(ctx context.Context, tx pgx.Tx, jurisdiction, feed, layer string) error {
	var exists bool
	ident := pgx.Identifier{CommonSchema, layer}.Sanitize()
	if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", ident).Scan(&exists); err != nil {
		return err
	}
	if exists {
		t := commonTable{layer: config.CommonLayer{Name: layer}}
		if _, err := tx.Exec(ctx, t.sql("DeleteCommonRows", feedTable{}), pgx.QueryExecModeDescribeExec, jurisdiction, feed); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, sqlQuery("ForgetCommonFeed"), jurisdiction, feed)
	return err
}

// deleteRemovedCommonRows deletes the rows of the features the poll
// removed from common layer layer, if its table exists.
func deleteRemovedCommonRows(ctx context.Context, r *applyRun, layer string) error {
	t := commonTable{layer: config.CommonLayer{Name: layer}}
	var exists bool
	if err := r.tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", t.ident()).Scan(&exists); err != nil || !exists {
		return err
	}
	_, err := r.tx.Exec(ctx, t.sql("DeleteRemovedCommonRows", r.table), pgx.QueryExecModeDescribeExec,
		r.jurisdiction, r.feed, r.pollID)
	return err
}

// misfit says which conformed value of out its declared layer's typed
// column cannot hold, nil when all fit.
func misfit(out map[string]string, cc *feeds.CommonConform) error {
	for _, c := range cc.Layer.Columns {
		if v := out[c.Name]; !fitsColumn(v, c.Type) {
			return fmt.Errorf("conformed %s %q is not a value of the %s column of common layer %s", c.Name, v, c.Type, cc.Layer.Name)
		}
	}
	return nil
}

// fitsColumn tells whether the conformed value v ("" is NULL) casts to a
// column of type typ, so that a feature whose value does not is skipped,
// as one the conform cannot map, and named in ingestd's words rather than
// failing the apply in PostgreSQL's. A date is left to PostgreSQL, whose
// formats are many: a bad one fails the apply.
func fitsColumn(v, typ string) bool {
	v = strings.TrimSpace(v)
	if v == "" {
		return true
	}
	switch typ {
	case "integer":
		_, err := strconv.ParseInt(v, 10, 32)
		return err == nil
	case "numeric":
		f, err := strconv.ParseFloat(v, 64)
		return err == nil && !math.IsInf(f, 0) && !strings.ContainsAny(v, "xXpP_")
	case "boolean":
		switch strings.ToLower(v) {
		case "t", "f", "true", "false", "y", "n", "yes", "no", "on", "off", "1", "0":
			return true
		}
		return false
	}
	return true
}
