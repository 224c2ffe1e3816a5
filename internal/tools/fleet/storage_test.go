package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// One statement run on two layers, with other numbers, is one statement;
// what it waited on is counted beside it.
func TestActiveStatementsGroupByStatement(t *testing.T) {
	var a activeStatements
	a.add(`CREATE TABLE "o0001"."l2" WITH (fillfactor = 100) AS SELECT 1`, "")
	a.add("CREATE TABLE \"o0713\".\"l4\"  WITH (fillfactor = 90)\n AS SELECT 2", "Lock:relation")
	a.add(`CREATE TABLE "o0713"."l4" WITH (fillfactor = 90) AS SELECT 3`, "Lock:relation")
	a.add(`CREATE TABLE "o0002"."l1" WITH (fillfactor = 90) AS SELECT 4`, "IO:DataFileRead")
	a.add(`COPY staged_features FROM STDIN`, "")
	if len(a.count) != 2 {
		t.Fatalf("%d statements, want 2: %v", len(a.count), a.text)
	}
	var create string
	for id, q := range a.text {
		if strings.HasPrefix(q, "CREATE TABLE") {
			create = id
		}
	}
	if a.count[create] != 4 {
		t.Errorf("CREATE TABLE seen %d times, want 4", a.count[create])
	}
	if got, want := a.waitText(create), "waiting at 3: Lock:relation 2, IO:DataFileRead 1"; got != want {
		t.Errorf("waits %q, want %q", got, want)
	}
	path := filepath.Join(t.TempDir(), "statements.txt")
	if err := a.print(path, 0); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), create+" 4 samples, waiting at 3") {
		t.Errorf("statements.txt begins %q", string(b)[:min(80, len(b))])
	}
}
