package feature_test

import (
	"strings"
	"testing"

	"github.com/ingestd/ingestd/encoding/geojson"
	"github.com/ingestd/ingestd/encoding/gml"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feature/featuretest"
)

// TestFeatureRepairsReported: a feature whose text a decoder repaired says
// which repairs (Feature.Repairs), so that the store counts them and
// invalid_feature: skip skips them; a sound feature next to it says none.
func TestFeatureRepairsReported(t *testing.T) {
	t.Parallel()
	feat := func(id, props string) string {
		return `{"type":"Feature","id":` + id + `,"geometry":null,"properties":` + props + `}`
	}
	tests := []struct {
		label, doc string
		want       feature.Repairs
	}{
		{"geojson utf8 value", featuretest.GeoJSONDoc(feat(`"a"`, "{\"k\":\"caf\xe9\"}")), feature.RepairedUTF8},
		{"geojson surrogate", featuretest.GeoJSONDoc(feat(`"a"`, `{"k":"\ud800"}`)), feature.RepairedSurrogate},
		{"geojson both", featuretest.GeoJSONDoc(feat(`"a"`, "{\"k\":\"\\udc00\xff\"}")), feature.RepairedUTF8 | feature.RepairedSurrogate},
		{"geojson id", featuretest.GeoJSONDoc(feat("\"caf\xe9\"", `{"k":1}`)), feature.RepairedUTF8},
		{"geojson sound", featuretest.GeoJSONDoc(feat(`"a"`, `{"k":"caf\u00e9 \ud83d\ude00"}`)), 0},
	}
	for _, tt := range tests {
		got, err := featuretest.ReadEvery(t, geojson.NewReader(strings.NewReader(tt.doc)))
		if err != nil || len(got) != 1 || got[0].Repairs != tt.want {
			t.Errorf("%s: %+v, %v; want repairs %b", tt.label, got, err, tt.want)
		}
	}
	// GML: the repaired feature, then a sound one; each feature is judged
	// by its own text (the counter is taken at each feature's end).
	doc := featuretest.GMLDoc("3.2", "<app:s>bad \x01 text</app:s>")
	doc = strings.Replace(doc, `</wfs:member>`, `</wfs:member><wfs:member><app:f gml:id="f.2"><app:s>fine</app:s></app:f></wfs:member>`, 1)
	got, err := featuretest.ReadEvery(t, gml.NewReader(strings.NewReader(doc)))
	if err != nil || len(got) != 2 || got[0].Repairs != feature.RepairedUTF8 || got[1].Repairs != 0 {
		t.Errorf("gml: %+v, %v; want the first repaired, the second not", got, err)
	}
	attr := strings.Replace(featuretest.GMLDoc("3.2", `<app:s>x</app:s>`), `gml:id="f.1"`, "gml:id=\"f\xff1\"", 1)
	if got, err := featuretest.ReadEvery(t, gml.NewReader(strings.NewReader(attr))); err != nil || len(got) != 1 || got[0].Repairs != feature.RepairedUTF8 {
		t.Errorf("gml id attribute: %+v, %v; want repaired", got, err)
	}
}
