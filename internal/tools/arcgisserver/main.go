// Command arcgisserver serves generated ArcGIS REST layers (the fixture of
// package arcgistest) on a loopback address, for the arcgis benchmark and
// demo when Koop is too slow (Koop re-reads and parses its GeoJSON file at
// every request: 4 s a request for a 200,000-polygon layer).
//
//	arcgisserver -listen 127.0.0.1:18312 -generate parcels=200000 -max-record-count 2000
//
// With -tracked the layer is arcgistest.Parcels with edit tracking
// (editFieldsInfo) and change tracking, and -churn D edits 0.5 % of it,
// deletes 0.1 % and adds 3 features every D, stamped with this clock, for
// the incremental refresh.
//
// The layer NAME is at http://ADDR/arcgis/rest/services/NAME/FeatureServer/0.
//
// With -fleet FILE it serves instead the ArcGIS origins of a fleet catalog
// (package internal/tools/fleet/catalog, written by the fleet driver, which
// runs this server as its child): every origin on its own loopback address,
// its layers squares (arcgistest.Squares) of their sizes, one copy per size
// shared by the layers of that size, a flapping origin answering 503 for
// its while after its first request. It prints "serving the fleet" once
// every origin listens.
package main

import (
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ingestd/ingestd/arcgis/arcgistest"
	"github.com/ingestd/ingestd/internal/tools/fleet/catalog"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18312", "loopback `ADDR` to listen on")
	generate := flag.String("generate", "parcels=200000", "NAME=N: a layer of N polygons (squares, every fifth with a hole)")
	mrc := flag.Int("max-record-count", 2000, "the layers' maxRecordCount")
	tracked := flag.Bool("tracked", false, "serve parcels with edit tracking and change tracking instead of squares")
	churn := flag.Duration("churn", 0, "with -tracked: edit 0.5 %, delete 0.1 % and add 3 features every `D` (0: never)")
	fleet := flag.String("fleet", "", "serve the ArcGIS origins of the fleet catalog `FILE` (JSON, written by internal/tools/fleet)")
	flag.Parse()
	if *fleet != "" {
		log.Fatal(serveFleet(*fleet, *mrc))
	}
	host, _, err := net.SplitHostPort(*listen)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		log.Fatalf("arcgisserver: -listen %q: only loopback addresses", *listen)
	}
	name, n, ok := strings.Cut(*generate, "=")
	count, err := strconv.Atoi(n)
	if !ok || err != nil || count < 0 {
		log.Fatalf("arcgisserver: -generate %q: want NAME=N", *generate)
	}
	srv := arcgistest.New()
	l := arcgistest.Squares(count)
	if *tracked {
		l = arcgistest.WithChangeTracking(arcgistest.Parcels(count))
	}
	l.MaxRecordCount = *mrc
	srv.AddLayer(name, l)
	if *tracked && *churn > 0 {
		go churnEvery(srv, name, count, *churn)
	}
	fmt.Println(arcgistest.URL("http://"+*listen, name))
	log.Fatal(http.ListenAndServe(*listen, srv))
}

// churnEvery edits the layer every d, as a county's editors would.
func churnEvery(srv *arcgistest.Server, name string, n int, d time.Duration) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 27))
	for now := range time.Tick(d) {
		srv.Edit(name, func(l *arcgistest.Layer) {
			arcgistest.Churn{Edits: max(1, n/200), Deletes: n / 1000, Adds: 3, At: now.UnixMilli()}.Apply(l, rng)
		})
	}
}

// serveFleet serves the ArcGIS origins of the catalog at path, with one
// arcgistest server behind every origin's listener (layer names are unique
// in a catalog), until a listener fails.
func serveFleet(path string, mrc int) error {
	c, err := catalog.Load(path)
	if err != nil {
		return err
	}
	srv := arcgistest.New()
	bySize := map[int]*arcgistest.Layer{}
	type listener struct {
		ln net.Listener
		h  http.Handler
	}
	var lns []listener
	layers := 0
	for _, o := range c.Origins {
		if !o.ArcGIS {
			continue
		}
		for _, l := range o.Layers {
			if bySize[l.Features] == nil {
				bySize[l.Features] = arcgistest.Squares(l.Features)
				bySize[l.Features].MaxRecordCount = mrc
			}
			srv.AddLayer(catalog.LayerName(o, l), bySize[l.Features])
			layers++
		}
		var h http.Handler = srv
		if o.Flap > 0 {
			h = &flapping{next: srv, d: o.Flap, addr: o.Addr}
		}
		ln, err := net.Listen("tcp", o.Addr)
		if err != nil {
			return fmt.Errorf("arcgisserver: origin %s: %w", o.ID, err)
		}
		lns = append(lns, listener{ln, h})
	}
	if len(lns) == 0 {
		return catalog.ErrNoOrigins
	}
	errc := make(chan error, len(lns))
	for _, l := range lns {
		hs := &http.Server{Handler: l.h, ReadHeaderTimeout: 10 * time.Second}
		go func() { errc <- hs.Serve(l.ln) }()
	}
	fmt.Printf("serving the fleet: %d origins, %d layers, %d distinct sizes\n", len(lns), layers, len(bySize))
	return <-errc
}

// flapping is an origin down for maintenance: every request in the first d
// after its first one answers 503, then it serves normally.
type flapping struct {
	next  http.Handler
	d     time.Duration
	addr  string
	once  sync.Once
	first time.Time
}

func (f *flapping) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.once.Do(func() {
		f.first = time.Now()
		log.Printf("arcgisserver: %s flapping: down for %s", f.addr, f.d)
	})
	if time.Since(f.first) < f.d {
		http.Error(w, "Service Unavailable: maintenance", http.StatusServiceUnavailable)
		return
	}
	f.next.ServeHTTP(w, r)
}
