package namedsql

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoad(t *testing.T) {
	fsys := fstest.MapFS{
		"ok.sql":     {Data: []byte("-- The file's comment.\n\n-- name: one\n-- Why one.\nSELECT 1;\n\n-- name: two\nSELECT 2\n\t-- an inner comment\nFROM t\n")},
		"dup.sql":    {Data: []byte("-- name: a\nSELECT 1\n-- name: a\nSELECT 2\n")},
		"before.sql": {Data: []byte("SELECT 0\n-- name: a\nSELECT 1\n")},
	}
	got, err := Load(fsys, "ok.sql")
	if err != nil {
		t.Fatal(err)
	}
	if got["one"] != "SELECT 1" || got["two"] != "SELECT 2\nFROM t" || len(got) != 2 {
		t.Errorf("Load: %q", got)
	}
	for file, want := range map[string]string{"dup.sql": "twice", "before.sql": "before the first", "none.sql": "not exist"} {
		if _, err := Load(fsys, file); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load(%s): %v, want an error saying %q", file, err, want)
		}
	}
}
