package download_test

import (
	"archive/zip"
	"io"
	"testing"
)

func writeZip(t *testing.T, w io.Writer, name, body string) {
	t.Helper()
	zw := zip.NewWriter(w)
	f, err := zw.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, body)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}
