package wfs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/schema"
	"github.com/ingestd/ingestd/source"
)

// DescribeURL returns the DescribeFeatureType request for layer.
func DescribeURL(layer source.Layer) (*url.URL, error) {
	if err := Validate(layer); err != nil {
		return nil, err
	}
	if layer.Kind != Kind {
		return nil, fmt.Errorf("wfs: %w: DescribeFeatureType needs a WFS layer", source.ErrInvalidLayer)
	}
	v := versionOf(layer)
	tn := "typeName"
	if v == "2.0.0" {
		tn = "typeNames"
	}
	return serviceURL(layer, kvpParams, [][2]string{
		{"service", "WFS"}, {"version", v}, {"request", "DescribeFeatureType"}, {tn, settingsOf(layer).TypeName},
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
		d, err = schema.FromXSD(br, settingsOf(layer).TypeName)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("wfs: DescribeFeatureType (%s): %w", RedactURL(u.String()), err)
	}
	return d, nil
}

// declared returns the layer's declared schema for a Fetch of a layer
// that asks for one (Layer.DescribeSchema), nil otherwise: the one read
// within the negotiation TTL (an hour by default, like GetCapabilities),
// else a fresh DescribeFeatureType. A refusal by the open breaker or the
// caller's deadline fails the fetch, as a page's would; any other failure
// (a server without DescribeFeatureType, a schema that does not describe
// the type) is a warning, and the fetch goes on with the layer's last
// declared schema (schema.Memo), or none.
func (c *Client) declared(ctx context.Context, layer source.Layer) (*schema.Declared, string, error) {
	if !layer.DescribeSchema || layer.Kind != Kind {
		return nil, "", nil
	}
	ttl := c.negotiation.ttl
	if ttl <= 0 {
		ttl = DefaultNegotiationTTL
	}
	d, err := c.declaredMemo.Get(keyOf(layer), ttl, c.base.Now, func() (*schema.Declared, error) { return c.Describe(ctx, layer) })
	if err == nil {
		return d, "", nil
	}
	var open *breaker.OpenError
	if errors.As(err, &open) || ctx.Err() != nil {
		return nil, "", err
	}
	if d != nil {
		return d, fmt.Sprintf("the layer's schema could not be read; its last one is used: %v", err), nil
	}
	return nil, fmt.Sprintf("the layer's schema could not be read; types are inferred from its values: %v", err), nil
}
