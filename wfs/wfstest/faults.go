package wfstest

import (
	"net/http"
	"strings"

	"github.com/ingestd/ingestd/internal/layertest"
)

// UnstablePages returns a FaultFunc that answers every GetFeature page of
// the layer called name with Count features of l picked afresh for each
// request (a different slice per request, wrapping around), as a
// FeatureCollection without numberMatched: a server that pages in no stable
// order and never sends a short page, so that paging never ends by itself.
// Other layers are served normally.
func UnstablePages(name string, l layertest.Layer) FaultFunc {
	return func(r Request) *Fault {
		if r.Layer != name || r.Count <= 0 || l.Len() == 0 {
			return nil
		}
		buf := []byte(`{"type":"FeatureCollection","features":[`)
		for i := range r.Count {
			if i > 0 {
				buf = append(buf, ',')
			}
			// Large odd strides keep each page a spread of the layer, and the
			// request's sequence number shifts the window every time.
			buf = l.AppendFeature(buf, int((r.Seq*7919+int64(i)*104729)%int64(l.Len())))
		}
		buf = append(buf, "]}"...)
		return &Fault{Status: http.StatusOK, Body: string(buf), ContentType: "application/json"}
	}
}

// RedirectTo returns a Fault that redirects the request to target (302),
// keeping the request's query when target has none, as a server that moved
// (or a hostile one pointing at file:// or another host) does.
func RedirectTo(r Request, target string) *Fault {
	if !strings.Contains(target, "?") && r.HTTP != nil && r.HTTP.URL.RawQuery != "" && strings.HasPrefix(target, "http") {
		target += "?" + r.HTTP.URL.RawQuery
	}
	return &Fault{Status: http.StatusFound, Header: map[string]string{"Location": target}}
}
