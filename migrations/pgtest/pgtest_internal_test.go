package pgtest

import "testing"

func TestWithDatabase(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://u:p@h:5432/ingestd?sslmode=disable", "postgres://u:p@h:5432/x?sslmode=disable"},
		{"postgresql://h/ingestd", "postgresql://h/x"},
		{"host=h dbname=ingestd", "host=h dbname=ingestd dbname=x"},
	} {
		if got := withDatabase(c.in, "x"); got != c.want {
			t.Errorf("withDatabase(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestRedact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://u:secret@h/db", "postgres://u:xxxxx@h/db"},
		{"postgres://u@h/db", "postgres://u@h/db"},
		{"host=h password=secret dbname=db", "host=h password=xxxxx dbname=db"},
		{"host=h password='se cret' dbname=db", "host=h password=xxxxx dbname=db"},
	} {
		if got := redact(c.in); got != c.want {
			t.Errorf("redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParallel(t *testing.T) {
	for _, c := range []struct{ procs, bound, want int }{
		{1, 8, 4},   // one core: perCore
		{2, 8, 8},   // the 2-core machine: the package's bound
		{2, 4, 4},   // a package bounded lower
		{4, 8, 8},   // the bound holds above
		{16, 8, 16}, // never below go test's default of GOMAXPROCS
	} {
		if got := Parallel(c.procs, c.bound); got != c.want {
			t.Errorf("Parallel(%d, %d) = %d, want %d", c.procs, c.bound, got, c.want)
		}
	}
}
