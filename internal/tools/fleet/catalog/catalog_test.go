package catalog

import (
	"net"
	"path/filepath"
	"testing"
	"time"
)

func params() Params {
	return Params{Feeds: 5000, Origins: 1000, ArcGISShare: 0.7, Median: 100, Sigma: 1.5, MinSize: 50,
		Big: 3, BigFeatures: 250000, Flapping: 5, FlapFor: time.Minute, Host: "127.77", Port: 18400, Seed: 40}
}

// TestGenerate checks the catalog bench.sh fleet runs: the kinds in the
// OpenAddresses proportions, every origin serving one kind and at least one
// layer on an address of its own, the big layers one of each kind, the
// flapping origins, and the same catalog from the same seed.
func TestGenerate(t *testing.T) {
	c, err := Generate(params())
	if err != nil {
		t.Fatal(err)
	}
	feeds, _ := c.Feeds()
	if feeds != 5000 || len(c.Origins) != 1000 {
		t.Fatalf("%d feeds over %d origins, want 5000 over 1000", feeds, len(c.Origins))
	}
	kinds := map[string]int{}
	bigKinds := map[string]int{}
	addrs := map[string]bool{}
	flapping := 0
	for _, o := range c.Origins {
		if len(o.Layers) == 0 {
			t.Errorf("origin %s serves no layer", o.ID)
		}
		if addrs[o.Addr] {
			t.Errorf("origin %s: address %s used twice", o.ID, o.Addr)
		}
		addrs[o.Addr] = true
		host, _, err := net.SplitHostPort(o.Addr)
		if err != nil || !net.ParseIP(host).IsLoopback() {
			t.Errorf("origin %s: %s is not a loopback address", o.ID, o.Addr)
		}
		if o.Flap > 0 {
			flapping++
		}
		names := map[string]bool{}
		for _, l := range o.Layers {
			kinds[l.Kind]++
			if (l.Kind == KindArcGIS) != o.ArcGIS {
				t.Errorf("origin %s (arcgis %v) serves a %s layer", o.ID, o.ArcGIS, l.Kind)
			}
			if names[l.Name] {
				t.Errorf("origin %s: layer %s twice", o.ID, l.Name)
			}
			names[l.Name] = true
			if l.Features < 50 || l.Features > 250000 {
				t.Errorf("%s/%s: %d features, want 50..250000", o.ID, l.Name, l.Features)
			}
			if l.Features == 250000 {
				bigKinds[l.Kind]++
			}
		}
	}
	if kinds[KindArcGIS] != 3500 || kinds[KindGeoJSON] != 750 || kinds[KindFile] != 750 {
		t.Errorf("kinds %v, want arcgis 3500, geojson 750, file 750", kinds)
	}
	if bigKinds[KindArcGIS] != 1 || bigKinds[KindGeoJSON] != 1 || bigKinds[KindFile] != 1 {
		t.Errorf("big layers by kind %v, want one of each", bigKinds)
	}
	if flapping != 5 {
		t.Errorf("%d flapping origins, want 5", flapping)
	}
	again, err := Generate(params())
	if err != nil {
		t.Fatal(err)
	}
	if c.Summary() != again.Summary() || c.Origins[17].Layers[0] != again.Origins[17].Layers[0] {
		t.Errorf("the same seed drew another catalog:\n%s\n%s", c.Summary(), again.Summary())
	}
	t.Log(c.Summary())

	path := filepath.Join(t.TempDir(), "catalog.json")
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Summary() != c.Summary() {
		t.Errorf("loaded %s, saved %s", loaded.Summary(), c.Summary())
	}
}

// TestArcGISSizesShareLayers checks that the ArcGIS sizes are few, so that
// arcgisserver holds a few dozen layers for thousands of feeds.
func TestArcGISSizesShareLayers(t *testing.T) {
	c, err := Generate(params())
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[int]bool{}
	for _, o := range c.Origins {
		for _, l := range o.Layers {
			if l.Kind == KindArcGIS {
				sizes[l.Features] = true
			}
		}
	}
	if len(sizes) > 6*ArcGISGrid {
		t.Errorf("%d distinct ArcGIS sizes, want at most %d", len(sizes), 6*ArcGISGrid)
	}
	for _, n := range []int{50, 100, 1000, 1234, 99999} {
		if q := Quantize(n); float64(q) < float64(n)*0.85 || float64(q) > float64(n)*1.16 {
			t.Errorf("Quantize(%d) = %d, more than a grid step away", n, q)
		}
	}
}

func TestGenerateRefuses(t *testing.T) {
	for name, p := range map[string]Params{
		"more origins than feeds": {Feeds: 10, Origins: 11, Host: "127.77"},
		"not loopback":            {Feeds: 10, Origins: 2, Host: "10.0"},
	} {
		if _, err := Generate(p); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
