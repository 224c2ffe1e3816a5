package postgis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/conform"
	"github.com/ingestd/ingestd/feeds"
)

// CommonSchema is the schema that holds the common layers' tables, one
// table per layer (common.addresses, …).
const CommonSchema = "common"

// commonPage is how many features the apply conforms between two writes
// of the common layer: the properties of one page are all it holds in
// memory, whatever the size of the feed or of its change.
const commonPage = 2000

// commonCursor is the cursor over the feed's features while its rows are
// conformed in full.
const commonCursor = "ingestd_common_features"

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
	var columns, names, values, arrays, aliases, sets, olds, news []string
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
// no query per page) and COPYed straight into the layer a page at a
// time, the feed's rows of it deleted just before: no temporary table, no
// upsert. The conform runs in a goroutine, a page behind the reads, so
// that conforming page k overlaps fetching page k+1; at most three pages
// are in memory (docs/decisions/0154).
func conformAllCommon(ctx context.Context, r *applyRun, t commonTable, cc *feeds.CommonConform) error {
	if _, err := r.tx.Exec(ctx, t.sql("DeleteCommonRows", r.table), r.jurisdiction, r.feed); err != nil {
		return err
	}
	if _, err := r.tx.Exec(ctx, sqlQuery("RecordCommonFeed"), r.jurisdiction, r.feed, cc.Layer.Name, cc.Digest); err != nil {
		return err
	}
	if _, err := r.tx.Exec(ctx, t.sql("DeclareAllFeatures", r.table), pgx.QueryExecModeExec); err != nil {
		return err
	}
	copySQL := t.sql("CopyCommonRows", r.table)
	fetch := fmt.Sprintf("FETCH %d FROM %s", commonPage, commonCursor)
	pages := make(chan []storedFeature, 1)
	conformed := make(chan copyPage, 1)
	go func() {
		defer close(conformed)
		for p := range pages {
			buf, err := encodeCommonRows(r, cc, p)
			conformed <- copyPage{buf: buf, err: err}
		}
	}()
	defer func() {
		close(pages)
		for range conformed { // the goroutine ends with the apply
		}
	}()
	pending := false
	for {
		p, err := fetchStoredFeatures(ctx, r.tx, fetch)
		if err != nil {
			return err
		}
		if pending {
			c := <-conformed
			pending = false
			if c.err != nil {
				return c.err
			}
			if _, err := r.tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(c.buf), copySQL); err != nil {
				return fmt.Errorf("feed %s/%s: writing its rows of common layer %s: %w", r.jurisdiction, r.feed, t.layer.Name, err)
			}
		}
		if len(p) == 0 {
			break
		}
		pages <- p
		pending = true
	}
	_, err := r.tx.Exec(ctx, "CLOSE "+commonCursor, pgx.QueryExecModeSimpleProtocol)
	return err
}

// storedFeature is a feature as the full conform's cursor reads it: its
// properties as JSON text and its layer geometry as hex EWKB (nil: none).
type storedFeature struct {
	id, props string
	geom      *string
}

// copyPage is a page of conformed rows in COPY's text format, or why the
// page could not be conformed.
type copyPage struct {
	buf []byte
	err error
}

// fetchStoredFeatures fetches the next page of the cursor (in text: the
// geometry arrives as the hex EWKB that COPY reads).
func fetchStoredFeatures(ctx context.Context, tx pgx.Tx, fetch string) ([]storedFeature, error) {
	rows, err := tx.Query(ctx, fetch, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []storedFeature
	for rows.Next() {
		var f storedFeature
		if err := rows.Scan(&f.id, &f.props, &f.geom); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// encodeCommonRows conforms a page of features into the rows of the
// layer, in COPY's text format: jurisdiction, feed, feature id, the
// layer's columns ("" is NULL) and the geometry.
func encodeCommonRows(r *applyRun, cc *feeds.CommonConform, page []storedFeature) ([]byte, error) {
	var buf []byte
	for _, f := range page {
		values, skip, err := conformFeature(r, cc, f.id, []byte(f.props))
		if err != nil {
			return nil, err
		}
		if skip != nil {
			r.commonSkips.skip(f.id, skip) // the goroutine's alone until the full conform ends
			continue
		}
		buf = appendCopyText(buf, r.jurisdiction)
		buf = append(buf, '\t')
		buf = appendCopyText(buf, r.feed)
		buf = append(buf, '\t')
		buf = appendCopyText(buf, f.id)
		for _, v := range values {
			buf = append(buf, '\t')
			if v == "" {
				buf = append(buf, `\N`...)
			} else {
				buf = appendCopyText(buf, v)
			}
		}
		buf = append(buf, '\t')
		if f.geom == nil {
			buf = append(buf, `\N`...)
		} else {
			buf = append(buf, *f.geom...)
		}
		buf = append(buf, '\n')
	}
	return buf, nil
}

// appendCopyText appends s as a value of COPY's text format.
func appendCopyText(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			buf = append(buf, '\\', '\\')
		case '\t':
			buf = append(buf, '\\', 't')
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\r':
			buf = append(buf, '\\', 'r')
		default:
			buf = append(buf, c)
		}
	}
	return buf
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
		r.commonSkips.read++
		r.commonSkips.last = id
		out, skip, err := conformFeature(r, cc, id, props)
		if err != nil {
			return nil, nil, nil, err
		}
		if skip != nil {
			r.commonSkips.skip(id, skip)
			continue
		}
		ids = append(ids, id)
		geoms = append(geoms, g)
		for i, v := range out {
			values[i] = append(values[i], v)
		}
	}
	return ids, geoms, values, rows.Err()
}

// conformFeature conforms one feature's stored properties to the values
// of the layer's columns, in the layer's order ("" is no value). skip says
// why the conform cannot map the feature — a function failing on its
// values, or a value its declared column cannot hold —, which skips the
// feature (docs/decisions/0156); err is a failure of the apply.
func conformFeature(r *applyRun, cc *feeds.CommonConform, id string, props []byte) (values []string, skip, err error) {
	values = make([]string, len(cc.Layer.Columns))
	err = cc.Conform.ApplyJSON(props, values)
	var ce *conform.Error
	switch {
	case errors.As(err, &ce):
		return nil, err, nil
	case err != nil:
		return nil, nil, fmt.Errorf("feed %s/%s: feature %s: reading its properties to conform them: %w",
			r.jurisdiction, r.feed, quoteInput(id), err)
	}
	for i, c := range cc.Layer.Columns {
		if v := values[i]; !fitsColumn(v, c.Type) {
			return nil, fmt.Errorf("conformed %s %q is not a value of the %s column of common layer %s", c.Name, v, c.Type, cc.Layer.Name), nil
		}
	}
	return values, nil, nil
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
