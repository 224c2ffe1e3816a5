package arcgis_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/arcgis"
	"github.com/ingestd/ingestd/arcgis/arcgistest"
	"github.com/ingestd/ingestd/source"
)

// TestIncrementalFetchModes follows one tracked layer through the
// fetcher alone: a full dump stores a watermark and a generation; a
// changed layer is read by its change log (a delta with the whole id
// list); a log that answers with a job is read by edit date, and said so
// once, not at every poll; a reconciliation is due after full_every even
// when the layer says unchanged.
func TestIncrementalFetchModes(t *testing.T) {
	f := newFixture(t)
	f.srv.AddLayer("l", arcgistest.WithChangeTracking(arcgistest.Parcels(300)))
	now := time.UnixMilli(1764600000000)
	f.client = arcgis.NewClient(nil, nil, nil, arcgis.WithClock(func() time.Time { return now }))
	layer := source.Layer{Settings: arcgis.Settings{FullEvery: 24 * time.Hour}}
	rng := rand.New(rand.NewPCG(1, 2))
	edit := func(at int64) {
		f.srv.Edit("l", func(l *arcgistest.Layer) { arcgistest.Churn{Edits: 4, Deletes: 2, Adds: 1, At: at}.Apply(l, rng) })
	}
	planned := 0
	layer.DeltaPlanned = func() { planned++ }
	step := func(name, wantMode string, wantDelta bool) source.FetchStats {
		t.Helper()
		planned = 0
		g, stats, err := f.fetch(t, layer)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// The poll reads the stored ids ahead when told a delta comes.
		wantPlanned := 0
		if wantDelta {
			wantPlanned = 1
		}
		if planned != wantPlanned {
			t.Fatalf("%s: DeltaPlanned called %d times; want %d", name, planned, wantPlanned)
		}
		if stats.Mode != wantMode || (stats.Delta != nil) != wantDelta {
			t.Fatalf("%s: mode %q, delta %v; want %q, delta %v", name, stats.Mode, stats.Delta != nil, wantMode, wantDelta)
		}
		if wantDelta && (stats.Delta.IDs.Len() != stats.NumberMatched || !slices.IsSorted(stats.Delta.IDs.Int) || len(g.ids) > 20) {
			t.Fatalf("%s: delta of %d ids (count %d), %d features fetched; want the whole sorted id list and a few features", name, stats.Delta.IDs.Len(), stats.NumberMatched, len(g.ids))
		}
		layer.Validators = stats.Validators
		return stats
	}
	first := step("first fetch", source.ModeFull, false)
	if v := first.Validators.Version; !strings.Contains(v, ";edit=EditDate@1700000000000;gen=1;full=1764600000000") {
		t.Fatalf("first version %q; want the greatest edit date, the generation and the full dump's time", v)
	}
	edit(1764600000000 + 3600_000)
	step("change log", source.ModeChangeTracking, true)

	f.srv.Edit("l", func(l *arcgistest.Layer) { l.Tracking.Async = true })
	edit(1764600000000 + 7200_000)
	s := step("a job instead of the log", source.ModeEditDate, true)
	if !slices.ContainsFunc(s.Warnings, func(w string) bool { return strings.Contains(w, "job") }) {
		t.Fatalf("warnings %q; want the job named", s.Warnings)
	}
	edit(1764600000000 + 3*3600_000)
	if s := step("the job again", source.ModeEditDate, true); len(s.Warnings) != 0 {
		t.Fatalf("warnings %q; want the job said once per feed", s.Warnings)
	}

	step("unchanged", source.ModeNotModified, false)
	now = now.Add(25 * time.Hour)
	if s := step("reconciliation", source.ModeFull, false); s.Reconcile == nil || s.Reconcile.Field != "EditDate" {
		t.Fatalf("reconciliation %+v; want one counted by EditDate", s.Reconcile)
	}
}

// TestIncrementalOff: incremental: off dumps a tracked layer whole and
// stores no watermark or generation.
func TestIncrementalOff(t *testing.T) {
	f := newFixture(t)
	f.srv.AddLayer("l", arcgistest.WithChangeTracking(arcgistest.Parcels(50)))
	layer := source.Layer{Settings: arcgis.Settings{Incremental: arcgis.IncrementalOff}}
	for i := range 2 {
		_, stats, err := f.fetch(t, layer)
		if err != nil || stats.Mode != source.ModeFull || stats.Delta != nil || strings.Contains(stats.Validators.Version, ";edit=") || strings.Contains(stats.Validators.Version, ";gen=") {
			t.Fatalf("fetch %d: %+v, %v; want a full dump storing only the cheap version", i, stats, err)
		}
		layer.Validators = stats.Validators
		f.srv.Edit("l", func(l *arcgistest.Layer) { l.LastEditDate++ })
	}
	if slices.Contains(f.srv.Requests("l"), "service") {
		t.Fatalf("requests %v; incremental: off reads no service", f.srv.Requests("l"))
	}
}
