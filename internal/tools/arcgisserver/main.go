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
	"time"

	"github.com/ingestd/ingestd/arcgis/arcgistest"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18312", "loopback `ADDR` to listen on")
	generate := flag.String("generate", "parcels=200000", "NAME=N: a layer of N polygons (squares, every fifth with a hole)")
	mrc := flag.Int("max-record-count", 2000, "the layers' maxRecordCount")
	tracked := flag.Bool("tracked", false, "serve parcels with edit tracking and change tracking instead of squares")
	churn := flag.Duration("churn", 0, "with -tracked: edit 0.5 %, delete 0.1 % and add 3 features every `D` (0: never)")
	flag.Parse()
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
