// Command arcgisserver serves generated ArcGIS REST layers (the fixture of
// package arcgistest) on a loopback address, for the arcgis benchmark and
// demo when Koop is too slow (Koop re-reads and parses its GeoJSON file at
// every request: 4 s a request for a 200,000-polygon layer).
//
//	arcgisserver -listen 127.0.0.1:18312 -generate parcels=200000 -max-record-count 2000
//
// The layer NAME is at http://ADDR/arcgis/rest/services/NAME/FeatureServer/0.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/ingestd/ingestd/arcgis/arcgistest"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18312", "loopback `ADDR` to listen on")
	generate := flag.String("generate", "parcels=200000", "NAME=N: a layer of N polygons (squares, every fifth with a hole)")
	mrc := flag.Int("max-record-count", 2000, "the layers' maxRecordCount")
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
	l.MaxRecordCount = *mrc
	srv.AddLayer(name, l)
	fmt.Println(arcgistest.URL("http://"+*listen, name))
	log.Fatal(http.ListenAndServe(*listen, srv))
}
