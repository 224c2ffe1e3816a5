package config

import (
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ingestd/ingestd/internal/yamlconf"
)

// Layer names: each feed's typed layer is <schema>.<name> in
// PostGIS, raleigh.zoning, nc.counties. A jurisdiction's schema: names its
// schema, a feed's name: its layer; by default each is the id with '-'
// made '_'. The rule, so that a name never silently shadows another layer:
//
//   - a name is a plain SQL identifier: lowercase letters, digits and '_',
//     starting with a letter or '_', at most 63 bytes (PostgreSQL's limit:
//     a longer one would be truncated, and two could meet); nothing is ever
//     truncated or rewritten beyond '-' → '_';
//   - it is not a reserved SQL word (user, order, table, …: a layer one
//     must quote in every query), and a schema is none of PostgreSQL's,
//     PostGIS's or ingestd's own (public, ingestd, pg_…, information_schema,
//     topology, tiger…); a layer's name does not begin with ingestd_ (the
//     schema's history table is ingestd_history);
//   - two jurisdictions with one schema, or two feeds of a jurisdiction
//     with one name, are a config error naming both.
//
// An id that breaks the rule (a leading digit, a reserved word, "a-b"
// beside "a_b") is no error until it is used as a default: the error then
// asks for a schema: or name: setting.

// reservedLayerPrefix begins the names of ingestd's own tables in each
// jurisdiction's schema (its feeds' history, ingestd_history): no layer
// takes one.
const reservedLayerPrefix = "ingestd_"

// maxIdentifier is PostgreSQL's longest identifier in bytes (NAMEDATALEN-1).
const maxIdentifier = 63

var identPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// reservedWords are PostgreSQL's reserved key words (pg_get_keywords()
// catcode R and T, PostgreSQL 15): none can name a table unquoted.
var reservedWords = wordSet(`all analyse analyze and any array as asc asymmetric authorization binary both case
	cast check collate collation column concurrently constraint create cross current_catalog current_date
	current_role current_schema current_time current_timestamp current_user default deferrable desc distinct
	do else end except false fetch for foreign freeze from full grant group having ilike in initially inner
	intersect into is isnull join lateral leading left like limit localtime localtimestamp natural not notnull
	null offset on only or order outer overlaps placing primary references returning right select
	session_user similar some symmetric table tablesample then to trailing true union unique user using
	variadic verbose when where window with`)

// reservedSchemas are schemas a jurisdiction may not take: PostgreSQL's,
// PostGIS's extensions', and ingestd's own.
var reservedSchemas = wordSet(`public ingestd information_schema topology tiger tiger_data postgis`)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// DefaultLayerIdent is the identifier an id gives by default: '-' made '_'.
func DefaultLayerIdent(id string) string { return strings.ReplaceAll(id, "-", "_") }

// identProblem says what is wrong with name as a layer's schema (schema
// true) or name, "" when nothing is.
func identProblem(name string, schema bool) string {
	switch {
	case len(name) > maxIdentifier:
		return fmt.Sprintf("is %d bytes long; PostgreSQL's limit is %d", len(name), maxIdentifier)
	case !identPattern.MatchString(name):
		return "is not a plain SQL identifier: use lowercase letters, digits and '_', starting with a letter or '_'"
	case reservedWords[name]:
		return "is a reserved SQL word (every query would have to quote it)"
	case schema && (reservedSchemas[name] || strings.HasPrefix(name, "pg_")):
		return "is reserved for PostgreSQL, PostGIS or ingestd itself"
	case !schema && strings.HasPrefix(name, reservedLayerPrefix):
		return "begins with " + reservedLayerPrefix + ", which names ingestd's own tables in a jurisdiction's schema (ingestd_history)"
	}
	return ""
}

// layerIdent reads key (schema or name) of m, or takes the id's default,
// and checks it; what names the owner for messages.
func (p *parser) layerIdent(m *yamlconf.Mapping, key, path, id string, schema bool) string {
	if s, present := p.Str(m, key, path); present {
		if !s.OK {
			return ""
		}
		if why := identProblem(s.Val, schema); why != "" {
			p.Errorf(s.Node, path+"."+key, "%s %q %s", key, s.Val, why)
			return ""
		}
		return s.Val
	}
	if id == "" {
		return ""
	}
	def := DefaultLayerIdent(id)
	if why := identProblem(def, schema); why != "" {
		p.Errorf(m.Node, path+"."+key, "the default %s %q (from id %q) %s: set %s:", key, def, id, why, key)
		return ""
	}
	return def
}

// layerNamesUnique reports two jurisdictions with one schema, and two
// feeds of one jurisdiction with one layer name: one layer would replace
// the other.
func (p *parser) layerNamesUnique(cfg *Config, nodes map[string]*yaml.Node) {
	schemas, ids := map[string]string{}, map[string]bool{}
	for _, j := range cfg.Jurisdictions {
		if j.Schema == "" || ids[j.ID] {
			continue // a duplicate id is reported as such
		}
		ids[j.ID] = true
		if other, dup := schemas[j.Schema]; dup {
			p.Errorf(nodes[j.ID], "jurisdictions", "jurisdictions %q and %q have the same schema %q: set schema: on one", other, j.ID, j.Schema)
			continue
		}
		schemas[j.Schema] = j.ID
		names, feedIDs := map[string]string{}, map[string]bool{}
		for _, f := range j.Feeds {
			if f.LayerName == "" || feedIDs[f.ID] {
				continue
			}
			feedIDs[f.ID] = true
			if other, dup := names[f.LayerName]; dup {
				p.Errorf(nodes[j.ID], "jurisdictions", "feeds %s/%s and %s/%s have the same layer %s.%s: set name: on one",
					j.ID, other, j.ID, f.ID, j.Schema, f.LayerName)
				continue
			}
			names[f.LayerName] = f.ID
		}
	}
}
