package file_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/file"
	"github.com/ingestd/ingestd/internal/ftptest"
)

// BenchmarkFTPFetch fetches a zipped CSV of 100,000 points from the real
// FTP server (vsftpd on loopback): download is a whole poll's fetch (MDTM,
// SIZE, RETR, read every feature), not_modified the next poll's with the
// validators it recorded (MDTM and SIZE only). It reports the bytes each
// transfers and the features each reads:
//
//	go test ./file -run '^$' -bench FTPFetch -benchtime 20x
func BenchmarkFTPFetch(b *testing.B) {
	srv := ftptest.Real(b)
	dir, folder := srv.Folder(b)
	var csv strings.Builder
	csv.WriteString("id,lon,lat,addr\n")
	for i := range 100000 {
		fmt.Fprintf(&csv, "%d,%.5f,%.5f,%d MAIN ST\n", i, -78.6+float64(i%1000)/1e4, 35.7+float64(i/1000)/1e4, i%9000+1)
	}
	ftptest.Put(b, dir, "pts.zip", zipOne(b, "pts.csv", csv.String()), time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	c := file.NewClient(nil, nil, nil, file.WithTempDir(b.TempDir()))
	l := layer("ftp://"+srv.Addr+"/"+folder+"/pts.zip", file.Settings{X: "lon", Y: "lat"})
	var col collect
	first, err := c.Fetch(b.Context(), l, 0, col.handle)
	if err != nil || first.Features != 100000 {
		b.Fatalf("%+v, %v", first, err)
	}
	for _, tc := range []struct {
		name  string
		known bool
	}{{"download", false}, {"not_modified", true}} {
		b.Run(tc.name, func(b *testing.B) {
			l := l
			if tc.known {
				l.Validators = first.Validators
			}
			var bytes, features int64
			for b.Loop() {
				col = collect{}
				stats, err := c.Fetch(b.Context(), l, 0, col.handle)
				if err != nil || stats.NotModified != tc.known {
					b.Fatalf("%+v, %v", stats, err)
				}
				bytes += stats.Bytes
				features += int64(len(col.props))
			}
			b.ReportMetric(float64(bytes)/float64(b.N), "data-bytes/op")
			b.ReportMetric(float64(features)/float64(b.N), "features/op")
		})
	}
}
