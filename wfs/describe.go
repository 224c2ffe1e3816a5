package wfs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/schema"
	"github.com/ingestd/ingestd/source"
)

// DescribeURL returns the DescribeFeatureType request for layer.
func DescribeURL(layer source.Layer) (*url.URL, error) {
	if err := Validate(layer); err != nil {
		return nil, err
	}
	if layer.Kind != KindWFS {
		return nil, fmt.Errorf("%w: DescribeFeatureType needs a WFS layer", ErrInvalidLayer)
	}
	v := versionOf(layer)
	tn := "typeName"
	if v == "2.0.0" {
		tn = "typeNames"
	}
	return serviceURL(layer, kvpParams, [][2]string{
		{"service", "WFS"}, {"version", v}, {"request", "DescribeFeatureType"}, {tn, layer.TypeName},
	})
}

// maxDescribeBytes bounds a DescribeFeatureType body (decompressed).
const maxDescribeBytes = 8 << 20

// Describe fetches layer's DescribeFeatureType (one logical call through
// the origin's breaker, like a page) and returns the declared schema of
// its feature type: its properties' XSD types mapped by schema.FromXSD.
func (c *Client) Describe(ctx context.Context, layer source.Layer) (*schema.Declared, error) {
	u, err := DescribeURL(layer)
	if err != nil {
		return nil, err
	}
	// A feature type's schema is a few kilobytes: a body past
	// maxDescribeBytes is not one (a hostile or broken server's bomb), and
	// the call stops there instead of reading it to the feed's limit.
	layer.Limits = layer.Limits.WithDefaults()
	layer.Limits.BodyBytes = min(layer.Limits.BodyBytes, maxDescribeBytes)
	var d *schema.Declared
	err = c.getXML(ctx, layer, u, func(br *bufio.Reader) error {
		var err error
		d, err = schema.FromXSD(br, layer.TypeName)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("wfs: DescribeFeatureType (%s): %w", RedactURL(u.String()), err)
	}
	return d, nil
}

// declaredCache keeps each layer's last declared schema: reused for the
// negotiation TTL (an hour by default, like GetCapabilities), so a feed
// polled every few minutes does not double its requests to the county;
// and, past it, for a poll whose DescribeFeatureType fails: its GML values
// are typed as the last ones were, so a passing failure does not make
// every feature look modified.
type declaredCache struct {
	mu      sync.Mutex
	entries map[negotiationKey]declaredEntry
}

type declaredEntry struct {
	d  *schema.Declared
	at time.Time
}

// declared returns the layer's declared schema for a Fetch of a layer
// that asks for one (Layer.DescribeSchema), nil otherwise: the one read
// within the negotiation TTL, else a fresh DescribeFeatureType. A refusal by
// the open breaker or the caller's deadline fails the fetch, as a page's
// would; any other failure (a server without DescribeFeatureType, a
// schema that does not describe the type) is a warning, and the fetch
// goes on with the layer's last declared schema, or none.
func (c *Client) declared(ctx context.Context, layer source.Layer) (*schema.Declared, string, error) {
	if !layer.DescribeSchema || layer.Kind != KindWFS {
		return nil, "", nil
	}
	key := keyOf(layer)
	ttl := c.negotiation.ttl
	if ttl <= 0 {
		ttl = DefaultNegotiationTTL
	}
	dc := &c.declaredCache
	dc.mu.Lock()
	e, ok := dc.entries[key]
	dc.mu.Unlock()
	if ok && c.now().Sub(e.at) < ttl {
		return e.d, "", nil
	}
	d, err := c.Describe(ctx, layer)
	dc.mu.Lock()
	defer dc.mu.Unlock()
	if err == nil {
		if dc.entries == nil {
			dc.entries = make(map[negotiationKey]declaredEntry)
		}
		dc.entries[key] = declaredEntry{d: d, at: c.now()}
		return d, "", nil
	}
	var open *breaker.OpenError
	if errors.As(err, &open) || ctx.Err() != nil {
		return nil, "", err
	}
	warning := fmt.Sprintf("the layer's schema could not be read; types are inferred from its values: %v", err)
	if last, ok := dc.entries[key]; ok {
		warning = fmt.Sprintf("the layer's schema could not be read; its last one is used: %v", err)
		return last.d, warning, nil
	}
	return nil, warning, nil
}
