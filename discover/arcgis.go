package discover

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/ingestd/ingestd/arcgis"
	"github.com/ingestd/ingestd/redact"
)

// arcgisPath splits an ArcGIS REST path after …/rest/services: a layer
// (…/FeatureServer/3), a service (…/MapServer) or a directory (the root,
// a folder).
var arcgisPath = regexp.MustCompile(`(?i)^(.*/rest/services)((?:/[^/]+)*?)(?:/(FeatureServer|MapServer)(?:/(\d+))?)?/?$`)

// arcgisDirectory is a services directory or folder document.
type arcgisDirectory struct {
	Folders  []string `json:"folders"`
	Services []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	} `json:"services"`
}

// arcgisService is a FeatureServer or MapServer document.
type arcgisService struct {
	Layers []struct {
		ID          int    `json:"id"`
		Name        string `json:"name"`
		Type        string `json:"type"`
		SubLayerIDs []int  `json:"subLayerIds"`
	} `json:"layers"`
	Tables []json.RawMessage `json:"tables"`
}

// arcgisURL walks what u names down to its layers.
func (d *Discoverer) arcgisURL(ctx context.Context, u *url.URL, res *Result) error {
	m := arcgisPath.FindStringSubmatch(u.Path)
	if m == nil {
		return fmt.Errorf("not an ArcGIS REST url (…/rest/services[/folder][/service/FeatureServer[/layer]])")
	}
	root := *u
	root.Path, root.RawPath = m[1], ""
	switch {
	case m[4] != "":
		svc := *u
		svc.Path, svc.RawPath = m[1]+m[2]+"/"+m[3], ""
		id, _ := strconv.Atoi(m[4])
		res.Layers = append(res.Layers, Layer{Kind: KindArcGIS, Service: strings.TrimPrefix(m[2], "/") + "/" + m[3],
			URL: svc.String() + "/" + strconv.Itoa(id), Count: -1})
		d.each(ctx, res.Layers, d.arcgisLayer)
		return nil
	case m[3] != "":
		svc := *u
		svc.Path, svc.RawPath = m[1]+m[2]+"/"+m[3], ""
		if err := d.arcgisService(ctx, &svc, strings.TrimPrefix(m[2], "/")+"/"+m[3], res); err != nil {
			return err
		}
	default:
		dir := *u
		dir.Path, dir.RawPath = strings.TrimRight(u.Path, "/"), ""
		if err := d.arcgisDirectory(ctx, &root, &dir, res, true); err != nil {
			return err
		}
	}
	d.each(ctx, res.Layers, d.arcgisLayer)
	return nil
}

// arcgisDirectory lists the services of a directory (and, at the root,
// of its folders): a FeatureServer is preferred to the MapServer of the
// same service, which serves the same layers.
func (d *Discoverer) arcgisDirectory(ctx context.Context, root, dir *url.URL, res *Result, top bool) error {
	var doc arcgisDirectory
	if err := d.arcgis.Describe(ctx, d.layer(KindArcGIS, dir.String()), &doc); err != nil {
		if top {
			return fmt.Errorf("%w (not a services directory? give a …/FeatureServer or …/FeatureServer/N url)", err)
		}
		res.Problems = append(res.Problems, "folder "+redact.URL(dir.String())+": "+redact.Error(err))
		return nil
	}
	feature := map[string]bool{}
	for _, s := range doc.Services {
		if s.Type == "FeatureServer" {
			feature[s.Name] = true
		}
	}
	for _, s := range doc.Services {
		if (s.Type != "FeatureServer" && s.Type != "MapServer") || (s.Type == "MapServer" && feature[s.Name]) {
			continue
		}
		svc := *root
		svc.Path, svc.RawPath = root.Path+"/"+s.Name+"/"+s.Type, ""
		if err := d.arcgisService(ctx, &svc, s.Name+"/"+s.Type, res); err != nil {
			res.Problems = append(res.Problems, "service "+redact.URL(svc.String())+": "+redact.Error(err))
		}
	}
	if top {
		for _, f := range doc.Folders {
			sub := *root
			sub.Path, sub.RawPath = root.Path+"/"+f, ""
			if err := d.arcgisDirectory(ctx, root, &sub, res, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// arcgisService lists the feature layers of a service (group layers,
// which hold no features, and tables, which have no geometry, left out).
func (d *Discoverer) arcgisService(ctx context.Context, svc *url.URL, name string, res *Result) error {
	var doc arcgisService
	if err := d.arcgis.Describe(ctx, d.layer(KindArcGIS, svc.String()), &doc); err != nil {
		return err
	}
	for _, l := range doc.Layers {
		if len(l.SubLayerIDs) > 0 || strings.EqualFold(l.Type, "Group Layer") {
			continue
		}
		if !d.keep(res, l.Name, name+"/"+l.Name) {
			continue
		}
		res.Layers = append(res.Layers, Layer{Kind: KindArcGIS, Name: l.Name, Service: name,
			URL: svc.String() + "/" + strconv.Itoa(l.ID), Count: -1})
	}
	return nil
}

// arcgisExtra is what discover reads of a layer beyond arcgis.LayerInfo.
type arcgisExtra struct {
	AdvancedQueryCapabilities struct {
		SupportsReturningQueryExtent bool `json:"supportsReturningQueryExtent"`
	} `json:"advancedQueryCapabilities"`
}

// arcgisLayer describes one layer: its description and its count.
func (d *Discoverer) arcgisLayer(ctx context.Context, l *Layer) {
	var raw json.RawMessage
	if l.Err = d.arcgis.Describe(ctx, d.layer(KindArcGIS, l.URL), &raw); l.Err != nil {
		return
	}
	var info arcgis.LayerInfo
	var extra arcgisExtra
	if err := json.Unmarshal(raw, &info); err != nil {
		l.Err = fmt.Errorf("arcgis: the layer description does not decode: %v", err)
		return
	}
	_ = json.Unmarshal(raw, &extra)
	if l.Name == "" {
		l.Name = info.Name
	}
	if l.Err = info.Check(); l.Err != nil {
		return
	}
	l.Geometry = strings.TrimPrefix(info.GeometryType, "esriGeometry")
	l.IDWhy = info.ObjectIDField + " (the layer's objectIdField)"
	if n, err := d.arcgis.Count(ctx, d.layer(KindArcGIS, l.URL)); err == nil {
		l.Count, l.CountFrom = n, "returnCountOnly"
	} else {
		l.Notes = append(l.Notes, "count unknown: "+redact.Error(err))
	}
	if info.LastEditDate() == 0 {
		l.Notes = append(l.Notes, "no editingInfo.lastEditDate: every poll reads the whole layer (no cheap refresh)")
	}
	if d.opts.Check {
		l.Checks = arcgisChecks(&info, &extra)
	}
}

// arcgisChecks says what a dump of the layer relies on and what the layer
// supports. A dump reads the id list and the features by objectIds, which
// every layer with object ids answers; the fallbacks for an id list that
// fails (huge layers) need statistics or pagination.
func arcgisChecks(info *arcgis.LayerInfo, extra *arcgisExtra) []Check {
	var cs []Check
	cs = append(cs, Check{What: "paging", Detail: fmt.Sprintf("maxRecordCount %d, supportsPagination %t, supportsReturningQueryExtent %t: pages are batches of object ids (at most maxRecordCount, and 5000)",
		info.MaxRecordCount, info.Pagination(), extra.AdvancedQueryCapabilities.SupportsReturningQueryExtent)})
	switch {
	case info.Statistics():
		cs = append(cs, Check{What: "fallback", Detail: "supportsStatistics: if the id list fails, the layer is read in object-id windows"})
	case info.Pagination():
		cs = append(cs, Check{What: "fallback", Detail: "no statistics but pagination: if the id list fails, the layer is read by resultOffset"})
	default:
		cs = append(cs, Check{What: "fallback", Detail: "neither statistics nor pagination: a poll fails if the server cannot answer the id list (returnIdsOnly)"})
	}
	c := Check{What: "completeness", Detail: "proven by the id list and the count (objectIdField " + info.ObjectIDField + ")"}
	cs = append(cs, c)
	if info.SRID() == 0 {
		cs = append(cs, Check{What: "crs", Fails: true, Detail: "the layer names no spatial reference ingestd can read"})
	}
	return cs
}
