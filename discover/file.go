package discover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"

	"github.com/ingestd/ingestd/crs"
	"github.com/ingestd/ingestd/file"
	"github.com/ingestd/ingestd/redact"
)

// fileURL downloads the file at raw (a zip, a zipped File Geodatabase, a
// GeoPackage, a FlatGeobuf, a GeoJSON or CSV file) and lists its layers as
// a kind: file feed names them (file.FileLayers): one feed per
// Shapefile of a zip, feature class of a File Geodatabase or table of a
// GeoPackage, with its layer:, or one feed for a file of one layer.
func (d *Discoverer) fileURL(ctx context.Context, raw string, res *Result) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	p, err := d.download(ctx, raw)
	if err != nil {
		return err
	}
	defer os.Remove(p)
	name := path.Base(u.Path)
	format, layers, err := file.FileLayers(p, name, "auto")
	if err != nil {
		return fmt.Errorf("file %s: %w", redact.URL(raw), err)
	}
	note := "read as " + format + " (the file's first bytes and name)"
	if len(layers) <= 1 {
		stem := strings.TrimSuffix(name, path.Ext(name))
		if len(layers) == 1 {
			stem = layers[0]
		}
		if d.keep(res, stem) {
			res.Layers = append(res.Layers, withCRS(fileLayer(raw, stem, "", note), p, name))
		}
		return nil
	}
	for _, l := range layers {
		if d.keep(res, l) {
			res.Layers = append(res.Layers, withCRS(fileLayer(raw, l, l, note), p, name))
		}
	}
	return nil
}

// withCRS adds to l, a layer of the local file at p, the CRS a poll would
// read it in and how it was identified; a CRS that matches none a poll
// knows is a warning (the feed is written commented out until a person
// sets its crs:), and a layer that does not open is the layer's error.
func withCRS(l Layer, p, name string) Layer {
	c, err := file.LayerCRS(p, name, l.FileLayer)
	var unknown *crs.UnknownError
	switch {
	case errors.As(err, &unknown):
		l.Checks = append(l.Checks, Check{What: "crs", Warns: true,
			Detail: err.Error() + ", then uncomment the feed"})
	case err != nil:
		l.Err = err
	case c.Code != "":
		l.Notes = append(l.Notes, fmt.Sprintf("CRS %s, identified by %s", c.Code, c.By))
	}
	return l
}

// fileLayer is the Layer of one layer of a downloadable file.
func fileLayer(raw, name, layer, note string) Layer {
	return Layer{Kind: KindFile, Name: name, URL: raw, FileLayer: layer, Count: -1,
		IDWhy: "none declared: a file names no key; set id_property to a unique attribute, or each feature is known by its content (a hash)",
		Notes: []string{note}}
}

// download fetches raw into a temporary file, within the options' body
// bound and request timeout, and returns its path.
func (d *Discoverer) download(ctx context.Context, raw string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return "", fmt.Errorf("file %s: %w", redact.URL(raw), err)
	}
	req.Header.Set("User-Agent", "ingestd-discover")
	for k, v := range d.opts.Headers {
		req.Header.Set(k, v)
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("file %s: %w", redact.URL(raw), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("file %s: HTTP %d", redact.URL(raw), resp.StatusCode)
	}
	tmp, err := os.CreateTemp("", "ingestd-discover-*")
	if err != nil {
		return "", err
	}
	n, err := io.Copy(tmp, io.LimitReader(resp.Body, d.opts.MaxBodyBytes+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		err = fmt.Errorf("file %s: reading it: %w", redact.URL(raw), err)
	case n > d.opts.MaxBodyBytes:
		err = fmt.Errorf("file %s: larger than %d bytes, which discover reads at most", redact.URL(raw), d.opts.MaxBodyBytes)
	}
	if err != nil {
		return "", errors.Join(err, os.Remove(tmp.Name()))
	}
	return tmp.Name(), nil
}
