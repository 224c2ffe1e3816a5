package ogcapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/source"
)

// CRS84 is the default CRS of OGC API – Features: WGS 84, longitude first.
const CRS84 = "http://www.opengis.net/def/crs/OGC/1.3/CRS84"

// Conformance classes this package looks for.
const (
	confCore    = "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core"
	confGeoJSON = "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson"
	confCRS     = "http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs"
)

// link is one member of a "links" array.
type link struct {
	Href string `json:"href"`
	Rel  string `json:"rel"`
	Type string `json:"type"`
}

// collection is what Prepare reads of a collection document: its links of
// the relations it uses, its CRS list, storage CRS and item type.
type collection struct {
	Links      []link
	CRS        []string
	StorageCRS string
	ItemType   string
}

// readCollection scans a collection document.
func readCollection(dec *json.Decoder) (collection, error) {
	var cd collection
	err := scanObject(dec, "the collection document", func(key string) error {
		var err error
		switch key {
		case "links":
			cd.Links, err = linkList(dec, func(l link) bool {
				switch l.Rel {
				case "items", relSchema, "schema", relQueryables, "queryables":
					return true
				}
				return false
			})
		case "crs":
			cd.CRS, err = stringList(dec, `member "crs"`, "CRSs", maxCRSs)
		case "storageCrs":
			cd.StorageCRS, err = stringValue(dec, `member "storageCrs"`)
		case "itemType":
			cd.ItemType, err = stringValue(dec, `member "itemType"`)
		default:
			err = skipValue(dec)
		}
		return err
	})
	return cd, err
}

// Discovery is what Prepare learnt about a collection, for validate and
// the logs.
type Discovery struct {
	// Root is the landing page; Collection the collection document's URL.
	Root, Collection string
	// Items is the items link Fetch starts at.
	Items string
	// Conformance lists the server's conformance classes ("" when the
	// server gave none).
	Conformance []string
	// CRSs is the collection's CRS list (Part 2), StorageCRS its storage CRS.
	CRSs       []string
	StorageCRS string
	// MaxLimit is the largest limit the server declares for the
	// collection (its OpenAPI document's limit parameter of the
	// collection's items path, else the server-wide one; see
	// limitMaximum), 0 when it declares none.
	MaxLimit int
	// Schema is the collection's JSON Schema link (Part 5 schema, else
	// Part 3 queryables), "" when it links none; SchemaOrigin names which.
	Schema, SchemaOrigin string
}

// Part2 reports whether the server declares OGC API – Features Part 2.
func (d Discovery) Part2() bool { return slices.Contains(d.Conformance, confCRS) }

// collectionURLs splits layer's URL into the landing page and the
// collection document: URL is either …/collections/{id} (Collection empty
// or equal to id) or the landing page with Collection set. Query
// parameters of URL (an API key) are kept on both.
func collectionURLs(layer source.Layer) (root, coll *url.URL, err error) {
	u, err := url.Parse(layer.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, nil, fmt.Errorf("%w: url %s is not an absolute http(s) URL", source.ErrInvalidLayer, redact.URL(layer.URL))
	}
	path := strings.TrimRight(u.Path, "/")
	root, coll = cloneURL(u), cloneURL(u)
	collection := settingsOf(layer).Collection
	if i := strings.LastIndex(path, "/collections/"); i >= 0 && !strings.Contains(path[i+len("/collections/"):], "/") {
		id, _ := url.PathUnescape(path[i+len("/collections/"):])
		if collection != "" && collection != id {
			return nil, nil, fmt.Errorf("%w: url names collection %q, collection: says %q", source.ErrInvalidLayer, id, collection)
		}
		root.Path, root.RawPath = path[:i], ""
		coll.Path, coll.RawPath = path, ""
		return root, coll, nil
	}
	if collection == "" {
		return nil, nil, fmt.Errorf("%w: url %s is not a collection (…/collections/{collectionId}); give the landing page and collection:", source.ErrInvalidLayer, redact.URL(layer.URL))
	}
	root.Path, root.RawPath = path, ""
	coll.Path = path + "/collections/" + collection
	coll.RawPath = path + "/collections/" + url.PathEscape(collection)
	return root, coll, nil
}

func cloneURL(u *url.URL) *url.URL { c := *u; return &c }

// Prepare discovers the collection: it reads the collection document (its
// items link, CRS list, storage CRS), the conformance classes and, when the
// landing page links one, the OpenAPI document's maximum limit. It returns
// the layer with its Settings.ItemsURL set and PageSize capped at that maximum, and
// warnings for what it had to assume. A discovery is reused for
// DefaultDiscoveryTTL (WithDiscoveryTTL). A CRS the server does not offer is a
// *CRSError; a layer that is not OGC API (no collection document) fails
// with the call's error.
func (c *Client) Prepare(ctx context.Context, layer source.Layer) (source.Layer, []string, error) {
	layer, warnings, err := c.prepare(ctx, layer)
	return layer, warnings, source.Named(kind, err)
}

func (c *Client) prepare(ctx context.Context, layer source.Layer) (source.Layer, []string, error) {
	s := settingsOf(layer)
	d, warnings, ok := c.discovery.get(layer.URL, s.Collection, c.base.Now())
	if !ok {
		var err error
		d, warnings, err = c.Discover(ctx, layer)
		if err != nil {
			return layer, warnings, err
		}
		c.discovery.put(layer.URL, s.Collection, d, warnings, c.base.Now())
	}
	s.ItemsURL = d.Items
	s.SchemaURL, s.SchemaOrigin = d.Schema, d.SchemaOrigin
	layer.Settings = s
	if d.MaxLimit > 0 && layer.PageSize > d.MaxLimit {
		warnings = append(warnings, fmt.Sprintf("page_size %d is above the server's maximum limit %d: asking for %d", layer.PageSize, d.MaxLimit, d.MaxLimit))
		layer.PageSize = d.MaxLimit
	} else if d.MaxLimit > 0 && layer.PageSize <= 0 && d.MaxLimit < DefaultLimit {
		// Asked for more, tipg answers 422 and pygeoapi pages short.
		layer.PageSize = d.MaxLimit
	}
	if s.CRS != "" && !isCRS84(s.CRS) {
		if !d.Part2() {
			return layer, warnings, &CRSError{URL: redact.URL(d.Collection), Want: s.CRS,
				Reason: "the server does not declare OGC API – Features Part 2 (conformance class " + confCRS + ")"}
		}
		if !slices.ContainsFunc(d.CRSs, func(c string) bool { return sameCRS(c, s.CRS) }) {
			return layer, warnings, &CRSError{URL: redact.URL(d.Collection), Want: s.CRS,
				Reason: fmt.Sprintf("not in the collection's crs list %v", d.CRSs)}
		}
	}
	return layer, warnings, nil
}

// Discover reads what Prepare needs; see Prepare.
func (c *Client) Discover(ctx context.Context, layer source.Layer) (Discovery, []string, error) {
	d, warnings, err := c.discover(ctx, layer)
	return d, warnings, source.Named(kind, err)
}

func (c *Client) discover(ctx context.Context, layer source.Layer) (Discovery, []string, error) {
	var d Discovery
	var warnings []string
	if err := httpcall.CheckHeaders(layer.Headers); err != nil {
		return d, nil, fmt.Errorf("%w: %w", source.ErrInvalidLayer, err)
	}
	root, coll, err := collectionURLs(layer)
	if err != nil {
		return d, nil, err
	}
	d.Root, d.Collection = root.String(), coll.String()
	var cd collection
	if err := c.getDoc(ctx, layer, withF(coll), collectionDoc, func(dec *json.Decoder) (err error) {
		cd, err = readCollection(dec)
		return err
	}); err != nil {
		return d, nil, fmt.Errorf("reading the collection document: %w", err)
	}
	d.CRSs, d.StorageCRS = cd.CRS, cd.StorageCRS
	if cd.ItemType != "" && cd.ItemType != "feature" {
		return d, nil, fmt.Errorf("%w: collection %s has itemType %q, not feature", source.ErrInvalidLayer, redact.URL(d.Collection), cd.ItemType)
	}
	items, ok := itemsLink(cd.Links)
	if !ok {
		warnings = append(warnings, "the collection document has no items link with a GeoJSON type: using {collection}/items")
		items = coll.JoinPath("items").String()
	} else if items, err = resolve(coll, items); err != nil {
		return d, nil, fmt.Errorf("%w: the collection's items link: %w", source.ErrInvalidLayer, err)
	}
	// The feed's own query parameters (an API key) go with every request.
	d.Items = Restore(items, layer.URL)
	if href, origin := schemaLink(cd.Links); href != "" {
		if u, err := resolve(coll, href); err == nil {
			d.Schema, d.SchemaOrigin = Restore(u, layer.URL), origin
		} else {
			warnings = append(warnings, "the collection's schema link: "+err.Error()+": types are inferred from the values")
		}
	}

	var conformsTo []string
	if err := c.getDoc(ctx, layer, withF(root.JoinPath("conformance")), conformanceDoc, func(dec *json.Decoder) error {
		return scanObject(dec, "the conformance document", func(key string) (err error) {
			if key != "conformsTo" {
				return skipValue(dec)
			}
			conformsTo, err = stringList(dec, `member "conformsTo"`, "conformance classes", maxConformance)
			return err
		})
	}); err != nil {
		if !feedsOwn(err) {
			return d, warnings, fmt.Errorf("reading the conformance classes: %w", err)
		}
		warnings = append(warnings, "no conformance document ("+err.Error()+"): assuming Part 1 Core only")
	}
	d.Conformance = conformsTo
	if slices.Contains(d.CRSs, "#/crs") {
		// Part 2: the collection inherits the list of /collections, whose
		// other members (every collection of the server) are skipped.
		var all []string
		err := c.getDoc(ctx, layer, withF(root.JoinPath("collections")), collectionsDoc, func(dec *json.Decoder) error {
			return scanObject(dec, "the collections document", func(key string) (err error) {
				if key != "crs" {
					return skipValue(dec)
				}
				all, err = stringList(dec, `member "crs"`, "CRSs", maxCRSs)
				return err
			})
		})
		if err == nil {
			d.CRSs = append(slices.DeleteFunc(slices.Clone(d.CRSs), func(s string) bool { return s == "#/crs" }), all...)
		}
	}
	max, w := c.maxLimit(ctx, layer, root, d.Items)
	d.MaxLimit = max
	if w != "" {
		warnings = append(warnings, w)
	}
	return d, warnings, nil
}

// feedsOwn reports whether err is an answer about the document (a 4xx, an
// exception with a client-side code) rather than the origin failing.
func feedsOwn(err error) bool {
	var se *httpcall.HTTPStatusError
	var ee *ExceptionError
	return (errors.As(err, &se) && se.Status >= 400 && se.Status < 500) || (errors.As(err, &ee) && !ee.ServerSide)
}

// maxLimit reads the maximum of the limit parameter of the collection
// whose items link is items from the OpenAPI document the landing page
// links (rel service-desc), 0 when there is none (see limitMaximum).
func (c *Client) maxLimit(ctx context.Context, layer source.Layer, root *url.URL, items string) (int, string) {
	var links []link
	if err := c.getDoc(ctx, layer, withF(root), landingDoc, func(dec *json.Decoder) error {
		return scanObject(dec, "the landing page", func(key string) (err error) {
			if key != "links" {
				return skipValue(dec)
			}
			links, err = linkList(dec, func(l link) bool { return l.Rel == "service-desc" })
			return err
		})
	}); err != nil {
		return 0, "no landing page (" + err.Error() + "): the server's maximum limit is unknown"
	}
	var href string
	for _, l := range links {
		if href == "" || strings.Contains(l.Type, "json") {
			href = l.Href
		}
	}
	if href == "" {
		return 0, ""
	}
	u, err := resolve(root, href)
	if err != nil {
		return 0, ""
	}
	pu, _ := url.Parse(u)
	if breaker.Origin(pu) != breaker.Origin(root) && !layer.CrossOriginRedirects {
		return 0, "the OpenAPI document is on another origin (" + breaker.Origin(pu) + "): the server's maximum limit is unknown"
	}
	max := 0
	if err := c.getDoc(ctx, layer, pu, openAPIDoc, func(dec *json.Decoder) (err error) {
		max, err = limitMaximum(dec, itemsPath(items))
		return err
	}); err != nil {
		return 0, "no OpenAPI document (" + err.Error() + "): the server's maximum limit is unknown"
	}
	return max, ""
}

// itemsPath is the path of the items link, "" when it does not parse.
func itemsPath(items string) string {
	u, err := url.Parse(items)
	if err != nil {
		return ""
	}
	return u.Path
}

// itemsLink picks the collection's items link of a GeoJSON media type:
// application/geo+json first, then application/json (or no type), whose
// body the decoder then judges. A link of another type (HTML, JSON-LD,
// CSV) is never taken: its body is not GeoJSON.
func itemsLink(links []link) (string, bool) {
	best, rank := "", 0
	for _, l := range links {
		if l.Rel != "items" || l.Href == "" {
			continue
		}
		r := 0
		mt, _, _ := strings.Cut(strings.ToLower(l.Type), ";")
		switch strings.TrimSpace(mt) {
		case "application/geo+json": // not application/geo+json-seq
			r = 2
		case "", "application/json":
			r = 1
		}
		if r > rank {
			best, rank = l.Href, r
		}
	}
	return best, rank > 0
}

// resolve resolves href against base, keeping base's query parameters
// (an API key) when href has none of its own.
func resolve(base *url.URL, href string) (string, error) {
	h, err := url.Parse(href)
	if err != nil {
		return "", fmt.Errorf("bad link %s: %s", feature.Snippet(redact.URL(href)), redact.Text(err.Error()))
	}
	u := base.ResolveReference(h)
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("link %s is not http(s)", redact.URL(u.String()))
	}
	return u.String(), nil
}

// withF returns u with f=json unless u already has an f parameter: some
// servers (MapServer) answer HTML to a browser-like request otherwise. It
// is for the documents whose URL ingestd builds from the feed's url (the
// landing page, conformance, the collection); a link the server gave
// (items, schema, queryables, next) is followed as given.
func withF(u *url.URL) *url.URL {
	c := cloneURL(u)
	q := c.Query()
	if !q.Has("f") {
		q.Set("f", "json")
		c.RawQuery = q.Encode()
	}
	return c
}

// request is the logical request of layer for u.
func request(layer source.Layer, u *url.URL, accept string) httpcall.Request {
	return httpcall.Request{URL: u, Home: layer.URL, Headers: layer.Headers, Accept: accept,
		Timeout: layer.RequestTimeout, BodyLimit: layer.Limits.BodyBytes, CrossOriginRedirects: layer.CrossOriginRedirects}
}
