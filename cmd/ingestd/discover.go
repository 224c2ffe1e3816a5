package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/ingestd/ingestd/discover"
	"github.com/ingestd/ingestd/redact"
)

// headerFlags collects repeated -header 'Name: value' flags.
type headerFlags map[string]string

func (h headerFlags) String() string { return "" }

func (h headerFlags) Set(s string) error {
	name, value, ok := strings.Cut(s, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return errors.New(`want "Name: value"`)
	}
	h[strings.TrimSpace(name)] = strings.TrimSpace(value)
	return nil
}

// cmdDiscover lists the layers at each URL and writes feeds for them
// (package discover); it exits 1 when a service or layer failed, after
// printing everything else.
func cmdDiscover(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("discover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ingestd discover [flags] URL...\n\nURL: an ArcGIS REST services directory, folder, service or layer; a WFS endpoint; an OGC API landing page, /collections or collection; a downloadable file (zip, GeoPackage, FlatGeobuf, GeoJSON, CSV).")
		fs.PrintDefaults()
	}
	jurisdiction := fs.String("jurisdiction", "", "id of the jurisdiction the feeds go under (default: the first URL's host)")
	schedule := fs.String("schedule", "", "cron schedule of every feed (default: none, the defaults' schedule)")
	filter := fs.String("filter", "", "keep only the layers whose name matches this regular expression")
	check := fs.Bool("check", false, "probe each layer's paging and completeness support (reads no layer) and say what would fail")
	kind := fs.String("kind", "", "wfs, arcgis, ogcapi or file (default: guessed from the URL; .zip, .gpkg and .fgb are files)")
	timeout := fs.Duration("request-timeout", 30*time.Second, "deadline of one HTTP request")
	headers := headerFlags{}
	fs.Var(headers, "header", "`Name: value` sent with every request (repeatable; never printed)")
	if err := parseFlags(fs, args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() == 0 {
		return usageError{"discover needs at least one URL"}
	}
	switch *kind {
	case "", discover.KindWFS, discover.KindArcGIS, discover.KindOGCAPI, discover.KindFile:
	default:
		return usageError{"-kind: want wfs, arcgis, ogcapi or file, not " + *kind}
	}
	opts := discover.Options{Kind: *kind, Check: *check, Headers: headers, RequestTimeout: *timeout}
	if *filter != "" {
		re, err := regexp.Compile(*filter)
		if err != nil {
			return usageError{"-filter: " + err.Error()}
		}
		opts.Filter = re
	}
	feeds := discover.Feeds{Jurisdiction: *jurisdiction, Schedule: *schedule}
	if feeds.Jurisdiction == "" {
		u, err := url.Parse(fs.Arg(0))
		if err != nil {
			return usageError{"bad URL " + redact.URL(fs.Arg(0))}
		}
		feeds.Jurisdiction = discover.JurisdictionID(u.Hostname())
	}
	ctx, stop := signalContext()
	defer stop()
	d := discover.New(nil, nil, opts)
	var results []*discover.Result
	failed := false
	for _, raw := range fs.Args() {
		res, err := d.Discover(ctx, raw)
		if err != nil {
			fmt.Fprintln(stderr, "ingestd:", redact.Error(err))
			failed = true
		}
		if res == nil {
			continue
		}
		if len(res.Problems) > 0 {
			failed = true
		}
		for i := range res.Layers {
			if res.Layers[i].Err != nil {
				failed = true
			}
		}
		results = append(results, res)
	}
	if err := discover.Write(stdout, results, feeds); err != nil {
		return err
	}
	if failed {
		return errReported
	}
	return nil
}
