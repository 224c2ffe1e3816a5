package ogcapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/schema"
	"github.com/ingestd/ingestd/source"
)

// Link relations of a collection's JSON Schema of its features: Part 5's
// schema (every property) is preferred to Part 3's queryables (the
// properties a filter may name, often all of them). MapServer 8.0 links
// neither: its layers' types are inferred from the values.
const (
	relSchema     = "http://www.opengis.net/def/rel/ogc/1.0/schema"
	relQueryables = "http://www.opengis.net/def/rel/ogc/1.0/queryables"
)

// schemaLink picks the collection's schema link (Part 5), else its
// queryables link (Part 3), a JSON type first; origin names which.
func schemaLink(links []link) (href, origin string) {
	rank := 0
	for _, l := range links {
		var r int
		var o string
		switch l.Rel {
		case relSchema, "schema":
			r, o = 3, "ogcapi schema"
		case relQueryables, "queryables":
			r, o = 1, "ogcapi queryables"
		default:
			continue
		}
		t := strings.ToLower(l.Type)
		if l.Href == "" || strings.Contains(t, "html") {
			continue
		}
		if strings.Contains(t, "json") {
			r++
		}
		if r > rank {
			href, origin, rank = l.Href, o, r
		}
	}
	return href, origin
}

// propertySchema is what FromJSONSchema reads of one property's schema.
type propertySchema struct {
	Type   json.RawMessage `json:"type"`
	Format string          `json:"format"`
	Ref    string          `json:"$ref"`
	Role   string          `json:"x-ogc-role"`
}

// FromJSONSchema maps the JSON Schema of a collection's features (a Part 3
// queryables or Part 5 schema document: an object schema whose
// "properties" name each property) to a declared schema, in the document's
// order. Types map as: integer → bigint; number → double precision (as GDAL
// and the servers' own columns have it), numeric with format decimal;
// boolean → boolean; string → text, date with format date, timestamptz with
// format date-time; object and array → jsonb. A number or a string without
// a format is Loose: values that all prove a narrower type (tipg declares
// every integer a number and a date a string) take it (schema.Build). A
// type list with null ("type": ["integer", "null"]) is its other member. A
// property with no type, several, or one not listed keeps its place with
// no type: its type is inferred from the values. The geometry (x-ogc-role
// primary-geometry, a format geometry-…, or a $ref to a GeoJSON geometry
// schema) is no column: it gives Declared.Geometry. The feature id
// (x-ogc-role id, pygeoapi's fid) is Declared.ID, a column at its place
// when the features carry it among their properties.
func FromJSONSchema(data []byte, origin string) (*schema.Declared, error) {
	var doc struct {
		Type       string          `json:"type"`
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("the %s document is not JSON: %w", origin, err)
	}
	if doc.Type != "" && doc.Type != "object" {
		return nil, fmt.Errorf("the %s document describes a %q, not an object", origin, doc.Type)
	}
	if len(doc.Properties) == 0 || string(doc.Properties) == "null" {
		return nil, fmt.Errorf("the %s document has no properties", origin)
	}
	d := &schema.Declared{Origin: origin}
	dec := json.NewDecoder(bytes.NewReader(doc.Properties))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("the %s document's properties are not an object", origin)
	}
	seen := make(map[string]bool)
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("the %s document's properties: %w", origin, err)
		}
		name, _ := t.(string)
		var p propertySchema
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("the %s document's property %q: %w", origin, name, err)
		}
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		if g, ok := geometryOf(p); ok {
			if d.Geometry == "" {
				d.Geometry = g
			}
			continue
		}
		if p.Role == "id" && d.ID == "" {
			d.ID = name
		}
		c := schema.Column{Name: name, Source: schema.FromDeclared}
		if typ, ok := jsonSchemaType(p); ok {
			f := strings.ToLower(p.Format)
			c.Type, c.Loose = typ, f == "" && (typ == schema.Double || typ == schema.Text)
		}
		d.Columns = append(d.Columns, c)
	}
	return d, nil
}

// geoJSONGeometries are the geometry types of GeoJSON, by the lower-case
// name a format geometry-… or a GeoJSON schema's file name spells.
var geoJSONGeometries = map[string]string{
	"point": "Point", "multipoint": "MultiPoint", "linestring": "LineString",
	"multilinestring": "MultiLineString", "polygon": "Polygon", "multipolygon": "MultiPolygon",
	"geometrycollection": "GeometryCollection",
}

// geometryOf reports whether p is the geometry, and its type ("" when
// any: geometry-any, Geometry.json).
func geometryOf(p propertySchema) (string, bool) {
	f := strings.ToLower(p.Format)
	switch {
	case strings.HasPrefix(f, "geometry-"):
		return geoJSONGeometries[strings.TrimPrefix(f, "geometry-")], true
	case strings.Contains(strings.ToLower(p.Ref), "geojson.org/schema/"):
		file := strings.ToLower(p.Ref[strings.LastIndexByte(p.Ref, '/')+1:])
		return geoJSONGeometries[strings.TrimSuffix(file, ".json")], true
	case p.Role == "primary-geometry" || p.Role == "secondary-geometry":
		return "", true
	}
	return "", false
}

// jsonSchemaType maps a property's JSON Schema type and format.
func jsonSchemaType(p propertySchema) (schema.Type, bool) {
	var one string
	if err := json.Unmarshal(p.Type, &one); err != nil {
		var list []string
		if err := json.Unmarshal(p.Type, &list); err != nil {
			return "", false
		}
		for _, t := range list {
			if t == "null" {
				continue
			}
			if one != "" {
				return "", false // a union of types: leave it to the values
			}
			one = t
		}
	}
	switch one {
	case "integer":
		return schema.BigInt, true
	case "number":
		if strings.ToLower(p.Format) == "decimal" {
			return schema.Numeric, true
		}
		return schema.Double, true
	case "boolean":
		return schema.Boolean, true
	case "string":
		switch strings.ToLower(p.Format) {
		case "date":
			return schema.Date, true
		case "date-time":
			return schema.Timestamp, true
		}
		return schema.Text, true
	case "object", "array":
		return schema.JSON, true
	}
	return "", false
}

// declared returns layer's declared schema for a Fetch, nil when the
// layer does not ask for one (Layer.DescribeSchema) or its collection
// links no schema: the one read within the discovery TTL (a collection's
// schema changes with the server's configuration), else a fresh read. A
// refusal by the open breaker or the caller's deadline fails the fetch, as
// a page's would; any other failure is a warning, and the fetch goes on
// with the last schema read from that link (schema.Memo), or none.
func (c *Client) declared(ctx context.Context, layer source.Layer) (*schema.Declared, string, error) {
	if !layer.DescribeSchema || settingsOf(layer).SchemaURL == "" {
		return nil, "", nil
	}
	ttl := c.discovery.ttl
	if ttl == 0 {
		ttl = DefaultDiscoveryTTL
	}
	d, err := c.declaredMemo.Get(settingsOf(layer).SchemaURL, ttl, c.base.Now, func() (*schema.Declared, error) { return c.describe(ctx, layer) })
	if err == nil {
		return d, "", nil
	}
	var open *breaker.OpenError
	if errors.As(err, &open) || ctx.Err() != nil {
		return nil, "", err
	}
	if d != nil {
		return d, fmt.Sprintf("the collection's schema could not be read; its last one is used: %v", err), nil
	}
	return nil, fmt.Sprintf("the collection's schema could not be read; types are inferred from its values: %v", err), nil
}

// describe reads and maps the collection's schema document, from its link
// exactly as the collection gave it (tipg answers its queryables with
// f=json by a 422).
func (c *Client) describe(ctx context.Context, layer source.Layer) (*schema.Declared, error) {
	u, err := url.Parse(settingsOf(layer).SchemaURL)
	if err != nil {
		return nil, fmt.Errorf("%w: schema link: %s", source.ErrInvalidLayer, redact.Text(err.Error()))
	}
	var raw json.RawMessage
	if err := c.getDoc(ctx, layer, u, schemaDoc, func(dec *json.Decoder) error { return dec.Decode(&raw) }); err != nil {
		return nil, fmt.Errorf("reading the collection's schema (%s): %w", redact.URL(u.String()), err)
	}
	origin := settingsOf(layer).SchemaOrigin
	if origin == "" {
		origin = "ogcapi schema"
	}
	d, err := FromJSONSchema(raw, origin)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", redact.URL(u.String()), err)
	}
	return d, nil
}
