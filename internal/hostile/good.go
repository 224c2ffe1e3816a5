package hostile

import (
	"net/http"
	"strconv"

	"github.com/ingestd/ingestd/arcgis/arcgistest"
	"github.com/ingestd/ingestd/encoding/esrijson"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/socrata/socratatest"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// GoodFeatures is the number of features of the good layer every case
// serves before it turns hostile.
const GoodFeatures = 2

// goodLayer is the layer of the good phase: two address points.
var goodLayer = layertest.Points{N: GoodFeatures}

// goodServer answers the good phase of every kind with goodLayer: WFS and
// plain GeoJSON by wfstest, ArcGIS REST by arcgistest, OGC API by the
// corpus's own documents (ogcapi.go), each under the case's URL, and
// Socrata by socratatest at the case's dataset (socrata.go).
type goodServer struct {
	wfs     *wfstest.Server
	arcgis  *arcgistest.Server
	socrata *socratatest.Server
}

func newGoodServer() *goodServer {
	g := &goodServer{wfs: wfstest.New(), arcgis: arcgistest.New(), socrata: goodPortal()}
	g.wfs.AddLayer("points", goodLayer)
	g.arcgis.AddLayer("points", arcgisPoints(GoodFeatures, 0))
	return g
}

// serve answers r, for a case of kind, whose path below the case is sub.
func (g *goodServer) serve(w http.ResponseWriter, r *http.Request, kind, sub string) {
	switch kind {
	case ArcGIS:
		g.arcgis.ServeHTTP(w, below(r, sub))
	case Socrata:
		g.socrata.ServeHTTP(w, below(r, goodSocrataPath(sub)))
	case OGCAPI:
		serveOGCAPI(w, r, sub, func(w http.ResponseWriter) {
			writeOGCPage(w, ogcPage{matched: GoodFeatures, returned: GoodFeatures, ids: []int{0, 1}})
		})
	case WFS, GML:
		if r.URL.Query().Get("request") != "" || r.URL.Query().Get("REQUEST") != "" {
			g.wfs.ServeHTTP(w, r)
			return
		}
		fallthrough
	default:
		// A plain document; so is any path that is not a case's (the peer).
		g.wfs.ServeHTTP(w, below(r, "/geojson/points.geojson"))
	}
}

// below is r for path: a fixture server that serves at its root answers
// a case's path.
func below(r *http.Request, path string) *http.Request {
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath = path, ""
	return r2
}

// arcgisPoints is an ArcGIS point layer of n features (object ids 1…n,
// WGS 84), last edited at 1700000000000 plus edit seconds: a hostile
// phase's layer is edited, so that a poll does not find it unchanged.
func arcgisPoints(n int, edit int64) *arcgistest.Layer {
	l := &arcgistest.Layer{GeometryType: esrijson.TypePoint, WKID: 4326, MaxRecordCount: 1000,
		LastEditDate: 1700000000000 + edit*1000,
		Fields:       []esrijson.Field{{Name: "OBJECTID", Type: esrijson.FieldOID}, {Name: "name", Type: "esriFieldTypeString"}}}
	for i := range n {
		l.Features = append(l.Features, arcgistest.Feature{OID: int64(i + 1),
			Attributes: map[string]any{"name": "point " + strconv.Itoa(i+1)},
			Geometry:   map[string]any{"x": -78.9 + float64(i)*0.001, "y": 35.6}})
	}
	return l
}
