// Package catalog is the generated catalog of `scripts/bench.sh fleet`: the
// origins, the layers each serves and their sizes, written once by the fleet
// driver as JSON and read by the fixture servers it starts in child
// processes (feedserver -fleet, arcgisserver -fleet), so that the driver,
// the servers and the ingestd configuration agree on every layer.
package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"sort"
	"strings"
	"time"
)

// The kinds of a catalog's feeds. An ArcGIS origin serves ArcGIS layers
// (arcgisserver); a download origin serves GeoJSON documents (feedserver),
// read as kind geojson or as a downloaded file (kind file).
const (
	KindArcGIS  = "arcgis"
	KindGeoJSON = "geojson"
	KindFile    = "file"
)

// Catalog is every origin of a fleet run.
type Catalog struct {
	Origins []Origin `json:"origins"`
}

// Origin is one loopback server: a county's ArcGIS Server or its download
// site.
type Origin struct {
	// ID is the jurisdiction whose feeds it serves.
	ID string `json:"id"`
	// Addr is host:port, a loopback address of its own.
	Addr string `json:"addr"`
	// ArcGIS: the origin is an ArcGIS REST server; otherwise it serves
	// GeoJSON documents.
	ArcGIS bool `json:"arcgis"`
	// Flap, when positive, makes the origin answer 503 to every request
	// for this long after its first one (a server down for maintenance).
	Flap time.Duration `json:"flap,omitempty"`
	// Layers are the origin's layers.
	Layers []Layer `json:"layers"`
}

// Layer is one feed of the catalog.
type Layer struct {
	// Name is the feed id, unique within its origin.
	Name string `json:"name"`
	// Kind is KindArcGIS, KindGeoJSON or KindFile.
	Kind string `json:"kind"`
	// Features is the layer's size.
	Features int `json:"features"`
}

// Params size a generated catalog.
type Params struct {
	Feeds, Origins int
	// ArcGISShare is the share of feeds that are ArcGIS layers (the rest are
	// split evenly between GeoJSON documents and file downloads).
	ArcGISShare float64
	// Median and Sigma are the log-normal size distribution's median and
	// the standard deviation of its logarithm; sizes are at least MinSize.
	Median  float64
	Sigma   float64
	MinSize int
	// Big layers have BigFeatures features each, one of each kind in turn.
	Big, BigFeatures int
	// Flapping origins answer 503 for FlapFor after their first request.
	Flapping int
	FlapFor  time.Duration
	// Host is the loopback address prefix "127.N" and Port the port every
	// origin listens on (each origin has an address of its own).
	Host string
	Port int
	Seed uint64
}

// ArcGISGrid quantizes ArcGIS layer sizes to this many steps per decade:
// arcgisserver holds an ArcGIS layer's features in memory, and layers of one
// size share one copy, so a catalog of thousands of layers costs the
// fixture a few dozen distinct layers.
const ArcGISGrid = 8

// Generate draws a catalog: the origins split by kind in the feeds'
// proportions, each feed on an origin of its kind chosen with a Zipf-like
// weight (a few origins serve many layers, most a few), sizes log-normal.
func Generate(p Params) (*Catalog, error) {
	if p.Feeds < 1 || p.Origins < 1 || p.Origins > p.Feeds {
		return nil, fmt.Errorf("catalog: %d feeds over %d origins: want 1 <= origins <= feeds", p.Feeds, p.Origins)
	}
	if p.Origins > 250*250 {
		return nil, fmt.Errorf("catalog: at most %d origins", 250*250)
	}
	if ip := net.ParseIP(p.Host + ".0.1"); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("catalog: host prefix %q: want 127.N", p.Host)
	}
	rng := rand.New(rand.NewPCG(p.Seed, 40))
	arcFeeds := int(math.Round(float64(p.Feeds) * p.ArcGISShare))
	arcOrigins := max(1, min(p.Origins-1, int(math.Round(float64(p.Origins)*p.ArcGISShare))))
	if arcFeeds == p.Feeds || p.Origins == 1 {
		arcOrigins = p.Origins
	}
	if arcFeeds == 0 {
		arcOrigins = 0
	}
	c := &Catalog{}
	for i := range p.Origins {
		c.Origins = append(c.Origins, Origin{
			ID:     fmt.Sprintf("o%04d", i+1),
			Addr:   fmt.Sprintf("%s.%d.%d:%d", p.Host, i/250, i%250+1, p.Port),
			ArcGIS: i < arcOrigins,
		})
	}
	kinds := feedKinds(p.Feeds, arcFeeds)
	sizes := drawSizes(p, rng, kinds)
	// Every origin gets one feed of its kind first, then the rest by weight.
	pick := func(arc bool) []int {
		var out []int
		for i, o := range c.Origins {
			if o.ArcGIS == arc {
				out = append(out, i)
			}
		}
		return out
	}
	pools := map[bool][]int{true: pick(true), false: pick(false)}
	next := map[bool]int{}
	zipf := map[bool]*rand.Zipf{}
	for arc, pool := range pools {
		if len(pool) > 1 {
			zipf[arc] = rand.NewZipf(rng, 1.1, 4, uint64(len(pool)-1))
		}
	}
	order := rng.Perm(p.Feeds)
	for _, f := range order {
		arc := kinds[f] == KindArcGIS
		pool := pools[arc]
		if len(pool) == 0 {
			return nil, fmt.Errorf("catalog: no origin for %s feeds", kinds[f])
		}
		var i int
		if next[arc] < len(pool) {
			i = pool[next[arc]]
			next[arc]++
		} else if z := zipf[arc]; z != nil {
			i = pool[z.Uint64()]
		} else {
			i = pool[0]
		}
		o := &c.Origins[i]
		o.Layers = append(o.Layers, Layer{Name: fmt.Sprintf("l%d", len(o.Layers)+1), Kind: kinds[f], Features: sizes[f]})
	}
	// The flapping origins: spread over the list, serving at least one feed.
	for k := range min(p.Flapping, len(c.Origins)) {
		i := (k*len(c.Origins)/max(1, p.Flapping) + 1) % len(c.Origins)
		c.Origins[i].Flap = p.FlapFor
	}
	return c, nil
}

// feedKinds is the kind of each of n feeds: ArcGIS first (arcFeeds), then
// GeoJSON and files alternating.
func feedKinds(n, arcFeeds int) []string {
	kinds := make([]string, n)
	for f := range kinds {
		switch {
		case f < arcFeeds:
			kinds[f] = KindArcGIS
		case (f-arcFeeds)%2 == 0:
			kinds[f] = KindGeoJSON
		default:
			kinds[f] = KindFile
		}
	}
	return kinds
}

// drawSizes draws each feed's size, log-normal, with p.Big layers of
// p.BigFeatures spread over the kinds, and ArcGIS sizes quantized.
func drawSizes(p Params, rng *rand.Rand, kinds []string) []int {
	sizes := make([]int, p.Feeds)
	for f := range sizes {
		n := p.Median * math.Exp(p.Sigma*rng.NormFloat64())
		sizes[f] = max(p.MinSize, int(n))
	}
	for k := range p.Big {
		want := []string{KindArcGIS, KindGeoJSON, KindFile}[k%3]
		f := slices.IndexFunc(kinds, func(kind string) bool { return kind == want })
		for f >= 0 && f < p.Feeds && (kinds[f] != want || sizes[f] == p.BigFeatures) {
			f++
		}
		if f < 0 || f >= p.Feeds {
			// No layer of that kind left: any layer.
			f = slices.IndexFunc(sizes, func(n int) bool { return n != p.BigFeatures })
		}
		if f >= 0 {
			sizes[f] = p.BigFeatures
		}
	}
	for f := range sizes {
		if kinds[f] == KindArcGIS && sizes[f] != p.BigFeatures {
			sizes[f] = Quantize(sizes[f])
		}
	}
	return sizes
}

// Quantize rounds n to the nearest of ArcGISGrid steps per decade.
func Quantize(n int) int {
	if n <= 1 {
		return n
	}
	step := math.Round(math.Log10(float64(n)) * ArcGISGrid)
	return int(math.Round(math.Pow(10, step/ArcGISGrid)))
}

// Load reads a catalog written by Save.
func Load(path string) (*Catalog, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Catalog
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("catalog %s: %w", path, err)
	}
	for _, o := range c.Origins {
		host, _, err := net.SplitHostPort(o.Addr)
		if err != nil {
			return nil, fmt.Errorf("catalog %s: origin %s: %w", path, o.ID, err)
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("catalog %s: origin %s: %s is not a loopback address", path, o.ID, o.Addr)
		}
	}
	return &c, nil
}

// Save writes the catalog as JSON.
func (c *Catalog) Save(path string) error {
	b, err := json.MarshalIndent(c, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// LayerName is the ArcGIS service name of an origin's layer: unique in the
// catalog, since one arcgisserver serves every ArcGIS origin.
func LayerName(o Origin, l Layer) string { return o.ID + "_" + l.Name }

// URL is the feed URL of an origin's layer.
func URL(o Origin, l Layer) string {
	if o.ArcGIS {
		return "http://" + o.Addr + "/arcgis/rest/services/" + LayerName(o, l) + "/FeatureServer/0"
	}
	return "http://" + o.Addr + "/geojson/" + l.Name + ".geojson"
}

// Feeds is the number of layers, and Features their total size.
func (c *Catalog) Feeds() (feeds, features int) {
	for _, o := range c.Origins {
		for _, l := range o.Layers {
			feeds++
			features += l.Features
		}
	}
	return feeds, features
}

// Summary describes the catalog in one paragraph: feeds by kind, origins,
// sizes (quantiles, total), flapping origins.
func (c *Catalog) Summary() string {
	byKind := map[string]int{}
	var sizes []int
	flapping, total := 0, 0
	for _, o := range c.Origins {
		if o.Flap > 0 {
			flapping++
		}
		for _, l := range o.Layers {
			byKind[l.Kind]++
			sizes = append(sizes, l.Features)
			total += l.Features
		}
	}
	if len(sizes) == 0 {
		return "an empty catalog"
	}
	sort.Ints(sizes)
	q := func(f float64) int { return sizes[min(len(sizes)-1, int(f*float64(len(sizes))))] }
	var perOrigin []int
	for _, o := range c.Origins {
		perOrigin = append(perOrigin, len(o.Layers))
	}
	sort.Ints(perOrigin)
	var b strings.Builder
	fmt.Fprintf(&b, "%d feeds (arcgis %d, geojson %d, file %d) over %d origins (%d flapping; layers per origin median %d, max %d); ",
		len(sizes), byKind[KindArcGIS], byKind[KindGeoJSON], byKind[KindFile], len(c.Origins), flapping,
		perOrigin[len(perOrigin)/2], perOrigin[len(perOrigin)-1])
	fmt.Fprintf(&b, "features per layer p50 %d, p90 %d, p99 %d, max %d; %d features in all", q(0.5), q(0.9), q(0.99), sizes[len(sizes)-1], total)
	return b.String()
}

// ErrNoOrigins is returned by a server given a catalog with none of its
// kind of origin.
var ErrNoOrigins = errors.New("catalog: no origins of this kind")
