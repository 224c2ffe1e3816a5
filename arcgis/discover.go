package arcgis

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/source"
)

// What package discover reads of a services directory: any of its
// documents (the directory, a folder, a service, a layer) and a layer's
// count, each one logical call as a Fetch makes them.

// newProbe is a dump of layer that only describes and counts.
func (c *Client) newProbe(layer source.Layer) (*dump, *url.URL, error) {
	if err := httpcall.CheckHeaders(layer.Headers); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", redact.URL(layer.URL), err)
	}
	base, err := url.Parse(strings.TrimRight(layer.URL, "/"))
	if err != nil {
		return nil, nil, fmt.Errorf("bad url %s: %s", redact.URL(layer.URL), httpcall.RedactErr(err, layer.URL))
	}
	query := *base
	query.Path += "/query"
	return &dump{c: c, layer: layer, limits: layer.Limits.WithDefaults(), query: &query, redacted: redact.URL(layer.URL),
		log: c.logger.With("url", redact.URL(layer.URL)), srids: map[int]bool{}}, base, nil
}

// Describe reads the JSON document at layer.URL (?f=json): a services
// directory, a folder, a service or a layer, bounded like a layer's
// description (MaxDescriptionBytes), an error object anywhere in it
// judged as a probe's. It is decoded into out with encoding/json.
func (c *Client) Describe(ctx context.Context, layer source.Layer, out any) error {
	d, base, err := c.newProbe(layer)
	if err != nil {
		return source.Named("arcgis", err)
	}
	u := *base
	q := u.Query()
	q.Set("f", "json")
	u.RawQuery = q.Encode()
	doc := document{name: "description", max: MaxDescriptionBytes, bound: "the bound of a layer's description"}
	return source.Named("arcgis", d.callJSON(ctx, doc, &u, nil, out))
}

// Check says why info is not a layer a Fetch can dump (a service, a
// multipatch layer, no object ids), as the probe of a Fetch would; it
// fills in the object id field from the fields when objectIdField is
// missing.
func (li *LayerInfo) Check() error { return source.Named("arcgis", li.check()) }

// Count asks the layer for its count (returnCountOnly, with the layer's
// where), as the second request of a Fetch does.
func (c *Client) Count(ctx context.Context, layer source.Layer) (int, error) {
	d, _, err := c.newProbe(layer)
	if err != nil {
		return 0, source.Named("arcgis", err)
	}
	n, err := d.count(ctx)
	return n, source.Named("arcgis", err)
}
