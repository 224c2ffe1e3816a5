package file

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ingestd/ingestd/crs"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/schema"
	"github.com/ingestd/ingestd/source"
)

func isLimit(err error) bool {
	var le *feature.LimitError
	return errors.As(err, &le)
}

// read opens the downloaded file at p and hands its features to handle as
// page 0. The file's reader is closed before read returns; a panic in the
// reader or the handler goes up after it (the poll recovers it), and the
// deferred removal in Fetch still runs.
func (c *Client) read(ctx context.Context, layer source.Layer, p, name string, page source.Page, handle source.PageFunc) (int, *schema.Declared, crs.Result, error) {
	var none crs.Result
	s := settingsOf(layer)
	o := OpenOptions{Name: name, Layer: s.Layer, Encoding: s.Encoding, X: s.X, Y: s.Y, WKT: s.WKT, Separator: s.Separator, HeaderLine: s.HeaderLine, NoHeader: s.NoHeader, SRID: s.SRID, CRS: s.SRID,
		IDProperty: layer.IDProperty, Limits: layer.Limits, TempDir: c.tempDir}
	if o.SRID == 0 {
		o.SRID = layer.SRID
	}
	fr, err := openLocal(p, s.Format, o)
	if err != nil {
		return 0, nil, none, source.Named(Kind, fmt.Errorf("%s: %w", page.URL, err))
	}
	defer fr.Close()
	id := identified(fr, s.SRID)
	if srid := fr.SRID(); srid != 4326 && layer.KnownSRID != nil {
		known, err := layer.KnownSRID(ctx, srid)
		if err != nil {
			return 0, nil, none, err
		}
		if !known {
			code := id.Code
			if code == "" {
				code = fmt.Sprintf("EPSG:%d", srid)
			}
			return 0, nil, none, source.Named(Kind, fmt.Errorf("%s: %s is not in the store's spatial_ref_sys: set crs: to a CRS it knows", page.URL, code))
		}
	}
	r := &countReader{r: fr}
	herr := handle(ctx, page, r)
	if herr == nil {
		// The handler may have stopped early: the layer counts only if
		// the file really ended there.
		if _, err := r.Next(); err != io.EOF {
			if err == nil {
				return r.n, nil, none, fmt.Errorf("%s: page 0 (%s): handler returned before the end of the file", Kind, page.URL)
			}
			herr = err
		}
	}
	if herr != nil {
		if r.err != nil && errors.Is(herr, r.err) {
			// The file's content: name the kind and the file once.
			return r.n, nil, none, source.Named(Kind, fmt.Errorf("%s: after %d features: %w", page.URL, r.n, r.err))
		}
		return r.n, nil, none, herr
	}
	return r.n, fr.Declared(), id, nil
}

// identified is the CRS the file's reader read the layer in and how it
// was identified: the reader's own account (Shapefile, GeoPackage,
// FlatGeobuf: package crs), else the feed's crs: when it has one; the
// zero Result for a text file in its default CRS.
func identified(fr FileReader, setting int) crs.Result {
	if c, ok := fr.(interface{ CRS() crs.Result }); ok {
		return c.CRS()
	}
	if setting != 0 {
		return crs.Result{SRID: setting, Code: fmt.Sprintf("EPSG:%d", setting), By: crs.BySetting}
	}
	return crs.Result{}
}

// countReader counts the features read and keeps the reader's error, to
// tell it from the handler's own.
type countReader struct {
	r   feature.FeatureReader
	n   int
	err error
}

func (c *countReader) Next() (*feature.Feature, error) {
	f, err := c.r.Next()
	if err != nil {
		if err != io.EOF {
			c.err = err
		}
		return nil, err
	}
	c.n++
	return f, nil
}
