package conform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// The function cases of batch-machine's own tests, openaddr/tests/conform.py
// (TestConformTransforms, TestAccuracyMap, TestConformTests and
// TestConformMisc.test_convert_regexp_replace): testdata/bmtests.py runs
// them, checks they pass, and records every call they make to a row
// function with its arguments and result, in testdata/bmtests.json.
// TestBatchMachineTests replays each call here. Left out: the file, CSV,
// GDAL and reprojection tests (TestConformCli, TestConformCsv,
// test_row_extract_and_reproject, find_source_path and the like), which are
// about reading sources, not mapping their fields.

type bmCall struct {
	Test   string            `json:"test"`
	Call   string            `json:"call"`
	Layer  string            `json:"layer"`
	Args   []json.RawMessage `json:"args"`
	Result json.RawMessage   `json:"result"`
	Error  string            `json:"error"`
	Fields []any             `json:"fields"`
}

type bmSourceConfig struct {
	Layer   string          `json:"layer"`
	Conform json.RawMessage `json:"conform"`
	Test    struct {
		Enabled *bool  `json:"enabled"`
		Tests   []Test `json:"acceptance-tests"`
	} `json:"test"`
}

func loadBMCalls(t *testing.T) []bmCall {
	t.Helper()
	data, err := os.ReadFile("testdata/bmtests.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Commit string   `json:"batch_machine_commit"`
		Tests  int      `json:"tests"`
		Calls  []bmCall `json:"calls"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if f.Tests != 24 || len(f.Calls) != 175 {
		t.Fatalf("bmtests.json holds %d tests and %d calls, want 24 and 175", f.Tests, len(f.Calls))
	}
	return f.Calls
}

// decodeRow reads a Python row: null becomes "", as the CSV the rows pass
// through in batch-machine makes it.
func decodeRow(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatalf("row %s: %v", raw, err)
	}
	return m
}

func stringRow(t *testing.T, m map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		s, err := pyStr(v)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = s
	}
	return out
}

// applyOne applies one function object (or a field list) for key to a row
// and returns the whole row after it, batch-machine's dict.
func applyOne(layer, key string, fxn any, in map[string]any) (map[string]string, error) {
	c := &Conform{layer: layer, columns: layers[layer], slotOf: map[string]int{}, refs: map[string]string{}, writes: map[string]bool{}, cur: key}
	for k := range in {
		c.slot(k)
	}
	var st step
	switch f := fxn.(type) {
	case []any:
		fs, err := c.fieldList(f)
		if err != nil {
			return nil, err
		}
		st = &mergeStep{fields: fs}
	case map[string]any:
		s, err := c.compileFunc(f, []string{key})
		if err != nil {
			return nil, err
		}
		st = s
	}
	ks := c.keySlots(key)
	r := row{vals: make([]string, len(c.slots)), set: make([]bool, len(c.slots))}
	for k, v := range in {
		s, err := pyStr(v)
		if err != nil {
			return nil, err
		}
		r.put(c.slotOf[k], s)
	}
	if err := st.run(c, &r, ks); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for i, n := range c.slots {
		if r.set[i] {
			out[n] = r.vals[i]
		}
	}
	return out, nil
}

func TestBatchMachineTests(t *testing.T) {
	calls := loadBMCalls(t)
	counts := map[string]int{}
	for i, call := range calls {
		counts[call.Test]++
		name := fmt.Sprintf("%s/%d/%s", call.Test, counts[call.Test], call.Call)
		t.Run(name, func(t *testing.T) {
			if call.Error != "" {
				t.Fatalf("call %d raised %s in batch-machine; no recorded call should", i, call.Error)
			}
			switch {
			case strings.HasPrefix(call.Call, "row_fxn_") || call.Call == "row_merge":
				var key string
				if err := json.Unmarshal(call.Args[2], &key); err != nil {
					t.Fatal(err)
				}
				in := decodeRow(t, call.Args[1])
				var fxn any
				if call.Call == "row_merge" {
					fxn = call.Fields
				} else if err := json.Unmarshal(call.Args[3], &fxn); err != nil {
					t.Fatal(err)
				}
				got, err := applyOne(call.Layer, key, fxn, in)
				if err != nil {
					t.Fatalf("%s on %v: %v", fxn, in, err)
				}
				want := stringRow(t, decodeRow(t, call.Result))
				if !maps.Equal(got, want) {
					t.Errorf("%v on %v:\n got %v\nwant %v", fxn, in, got, want)
				}
			case call.Call == "row_canonicalize_unit_and_number":
				c := mustCompile(t, `{layer: addresses, number: number, street: street, unit: unit}`)
				in := decodeRow(t, call.Args[1])
				got, err := c.Apply(in)
				if err != nil {
					t.Fatal(err)
				}
				want := stringRow(t, decodeRow(t, call.Result))
				for _, col := range []string{"number", "street", "unit"} {
					if got[col] != want[col] {
						t.Errorf("%s of %v: got %q, want %q", col, in, got[col], want[col])
					}
				}
			case call.Call == "row_transform_and_convert" || call.Call == "row_convert_to_out":
				var sc bmSourceConfig
				if err := json.Unmarshal(call.Args[0], &sc); err != nil {
					t.Fatal(err)
				}
				spec, err := ParseOpenAddresses(sc.Conform, sc.Layer)
				if err != nil {
					t.Fatal(err)
				}
				c, err := Compile(spec)
				if err != nil {
					t.Fatal(err)
				}
				in := decodeRow(t, call.Args[1])
				got, err := c.Apply(in)
				if err != nil {
					t.Fatal(err)
				}
				var feat struct {
					Properties map[string]any `json:"properties"`
				}
				if err := json.Unmarshal(call.Result, &feat); err != nil {
					t.Fatal(err)
				}
				want := stringRow(t, feat.Properties)
				delete(want, "hash")
				if !maps.Equal(got, want) {
					t.Errorf("%s on %v:\n got %v\nwant %v", sc.Conform, in, got, want)
				}
			case call.Call == "convert_regexp_replace":
				var in, want string
				if err := json.Unmarshal(call.Args[0], &in); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(call.Result, &want); err != nil {
					t.Fatal(err)
				}
				if got := convertRegexpReplace(in); got != want {
					t.Errorf("convertRegexpReplace(%q) = %q, want %q", in, got, want)
				}
			case call.Call == "check_source_tests":
				var sc bmSourceConfig
				if err := json.Unmarshal(call.Args[0], &sc); err != nil {
					t.Fatal(err)
				}
				var res []any
				if err := json.Unmarshal(call.Result, &res); err != nil {
					t.Fatal(err)
				}
				if sc.Test.Enabled != nil && !*sc.Test.Enabled {
					// Whether a feed's tests run is its configuration's
					// business, not RunTests'.
					return
				}
				spec, err := ParseOpenAddresses(sc.Conform, sc.Layer)
				if err != nil {
					t.Fatal(err)
				}
				c, err := Compile(spec)
				if err != nil {
					t.Fatal(err)
				}
				fails := RunTests(c, sc.Test.Tests)
				switch res[0] {
				case nil, true:
					if len(fails) > 0 {
						t.Errorf("batch-machine passes these tests; RunTests fails %v", fails)
					}
				case false:
					msg, _ := res[1].(string)
					if len(fails) == 0 || !strings.Contains(msg, fails[0].Description) {
						t.Errorf("batch-machine fails with %q; RunTests says %v", msg, fails)
					}
				}
			default:
				t.Fatalf("no replay for %s", call.Call)
			}
		})
	}
	want := []string{"TestAccuracyMap.test_row_fxn_map", "TestConformMisc.test_convert_regexp_replace", "TestConformTransforms.test_row_fxn_chain_nested", "TestConformTransforms.test_transform_and_convert"}
	for _, w := range want {
		if counts[w] == 0 {
			t.Errorf("no calls recorded from %s", w)
		}
	}
	_ = slices.Sorted(maps.Keys(counts))
}

func mustCompile(t testing.TB, yamlSpec string) *Conform {
	t.Helper()
	s, err := ParseSpec([]byte(yamlSpec))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
