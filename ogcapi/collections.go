package ogcapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/encoding/geojson"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/source"
	"github.com/twpayne/go-geom"
)

// What package discover reads of a server: its list of collections, and
// one short page of a collection's items.

// maxCollections bounds the collections one /collections document may list.
const maxCollections = 100_000

// CollectionInfo is one collection of a server's /collections document.
type CollectionInfo struct {
	ID, Title string
	// ItemType is "feature" for a feature collection ("" when not given,
	// which Part 1 reads as feature).
	ItemType string
}

// LandingURL is the landing page of a server given either it or its
// /collections list (a trailing slash or query parameters kept as given).
func LandingURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: url %s is not an absolute http(s) URL", source.ErrInvalidLayer, redact.URL(raw))
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/collections")
	u.RawPath = ""
	return u, nil
}

// Collections reads the /collections document of the server whose landing
// page (or collections list) is layer.URL, within the collections
// document's bound, one collection at a time.
func (c *Client) Collections(ctx context.Context, layer source.Layer) ([]CollectionInfo, error) {
	root, err := LandingURL(layer.URL)
	if err != nil {
		return nil, source.Named(kind, err)
	}
	var out []CollectionInfo
	err = c.getDoc(ctx, layer, withF(root.JoinPath("collections")), collectionsDoc, func(dec *json.Decoder) error {
		return scanObject(dec, "the collections document", func(key string) error {
			if key != "collections" {
				return skipValue(dec)
			}
			return scanArray(dec, `member "collections"`, func() error {
				if len(out) == maxCollections {
					return tooMany("collections", maxCollections)
				}
				var ci CollectionInfo
				err := scanObject(dec, "a collection", func(key string) (err error) {
					switch key {
					case "id":
						ci.ID, err = stringValue(dec, `member "id"`)
					case "title":
						ci.Title, err = stringValue(dec, `member "title"`)
					case "itemType":
						ci.ItemType, err = stringValue(dec, `member "itemType"`)
					default:
						err = skipValue(dec)
					}
					return err
				})
				out = append(out, ci)
				return err
			})
		})
	})
	if err != nil {
		return nil, source.Named(kind, fmt.Errorf("reading the collections document: %w", err))
	}
	return out, nil
}

// ItemsPage is what one page of items says about its collection.
type ItemsPage struct {
	// NumberMatched is the page's numberMatched, -1 when it has none;
	// NumberMatchedText is set instead when it is a string but no count.
	NumberMatched     int
	NumberMatchedText string
	// Features is how many features the page held.
	Features int
	// Next is the page's rel="next" link, "" when it has none.
	Next string
	// FirstID and FirstGeometry are the first feature's id ("" when it
	// has none) and geometry type ("" when null or no feature).
	FirstID, FirstGeometry string
}

// FirstPageURL is the first page's request of a prepared layer (see
// Prepare) with limit n.
func FirstPageURL(layer source.Layer, n int) (string, error) {
	layer.PageSize = n
	u, err := FirstURL(layer)
	if err != nil {
		return "", source.Named(kind, err)
	}
	return u.String(), nil
}

// Page reads the items page at u (a first page, or a next link), a
// logical call judged as a Fetch's page, within the layer's limits.
func (c *Client) Page(ctx context.Context, layer source.Layer, u string) (ItemsPage, error) {
	pu, err := url.Parse(u)
	if err != nil {
		return ItemsPage{}, source.Named(kind, fmt.Errorf("%w: page url: %s", source.ErrInvalidLayer, redact.Text(err.Error())))
	}
	req := request(layer, pu, accept)
	var p ItemsPage
	err = c.base.Calls.Call(ctx, req, func(a *httpcall.Attempt) breaker.Result {
		p = ItemsPage{NumberMatched: -1}
		dec, done := c.scanItems(a, layer, "items page", func(f *feature.Feature) {
			if p.Features++; p.Features == 1 {
				p.FirstID = f.ID
				if f.Geometry != nil {
					p.FirstGeometry = geometryNameOf(f.Geometry)
				}
			}
		})
		if done != nil {
			return *done
		}
		if p.NumberMatchedText = dec.NumberMatchedText(); p.NumberMatchedText == "" {
			p.NumberMatched = dec.NumberMatched()
		}
		next, err := nextLink(dec.Links())
		if err != nil {
			return breaker.Result{Outcome: breaker.Success, Err: &httpcall.BodyError{URL: a.Redacted, Err: err}}
		}
		if next != "" {
			if p.Next, err = resolve(pu, next); err != nil {
				return breaker.Result{Outcome: breaker.Success, Err: &httpcall.BodyError{URL: a.Redacted, Err: err}}
			}
		}
		return breaker.Result{Outcome: breaker.Success}
	})
	return p, source.Named(kind, err)
}

// scanItems reads a's body as an items document (name names it in
// errors) within layer's limits, judged as a Fetch's page, handing each
// feature to each. It returns the decoder, past the features, for what
// the document says after them, or the verdict that ends the attempt.
func (c *Client) scanItems(a *httpcall.Attempt, layer source.Layer, name string, each func(*feature.Feature)) (*geojson.Reader, *breaker.Result) {
	verdict := func(r breaker.Result) (*geojson.Reader, *breaker.Result) { return nil, &r }
	br, _, err := a.OpenBody(name)
	if err != nil {
		return verdict(a.Verdict(httpcall.ReadFailure(a.Resp, err, a.Redacted)))
	}
	if r := classify(a.Resp, br, a.Redacted, c.base.Now()); r != nil {
		return verdict(a.Verdict(r))
	}
	dec := geojson.NewReader(br, feature.WithLimits(layer.Limits.WithDefaults()))
	for {
		f, err := dec.Next()
		if err == io.EOF {
			return dec, nil
		}
		if err != nil {
			return verdict(a.StreamFailed(&httpcall.BodyError{URL: a.Redacted, Err: err}))
		}
		each(f)
	}
}

// geometryNameOf is g's GeoJSON type, or its Go type where GeoJSON names
// none (for the listing, never empty).
func geometryNameOf(g geom.T) string {
	if n := feature.GeometryName(g); n != "" {
		return n
	}
	return fmt.Sprintf("%T", g)
}
