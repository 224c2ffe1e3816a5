package download

import (
	"archive/zip"
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/shapefile"
)

// ErrZipBomb is a zip whose entries uncompress to more than
// limits.body_bytes.
var ErrZipBomb = errors.New("zip bomb")

// openZip reads the zip at p: one of its Shapefiles (the feed's layer:
// when it holds several), or the one file of another format it holds.
func openZip(p string, o OpenOptions) (FileReader, error) {
	zr, err := zip.OpenReader(p)
	if err != nil {
		return nil, fmt.Errorf("the zip is damaged or cut short (its central directory cannot be read): %w", err)
	}
	fr, err := openZipped(zr, o)
	if err != nil {
		zr.Close()
		return nil, err
	}
	return fr, nil
}

func openZipped(zr *zip.ReadCloser, o OpenOptions) (FileReader, error) {
	if err := checkBomb(zr.File, o.Limits.WithDefaults().BodyBytes); err != nil {
		return nil, err
	}
	layers := shapefileLayers(zr.File)
	if len(layers) == 0 {
		return openInner(zr, o)
	}
	names := make([]string, len(layers))
	for i, l := range layers {
		names[i] = l.name
	}
	var l shpLayer
	switch {
	case o.Layer != "":
		i := slices.IndexFunc(layers, func(l shpLayer) bool { return strings.EqualFold(l.name, o.Layer) })
		if i < 0 {
			return nil, fmt.Errorf("the zip has no layer %q: its Shapefiles are %s", o.Layer, strings.Join(names, ", "))
		}
		l = layers[i]
	case len(layers) > 1:
		return nil, fmt.Errorf("the zip holds %d Shapefiles (%s): choose one with layer:", len(layers), strings.Join(names, ", "))
	default:
		l = layers[0]
	}
	return openShapefile(zr, l, names, o)
}

// checkBomb refuses a zip whose entries, all together, uncompress to more
// than limit bytes, by their central directory: archive/zip then refuses
// an entry that inflates past its declared size (zip.ErrFormat), so the
// directory cannot lie its way past the bound.
func checkBomb(files []*zip.File, limit int64) error {
	var total uint64
	for _, f := range files {
		total += f.UncompressedSize64
		if total > uint64(limit) {
			var compressed uint64
			for _, f := range files {
				compressed += f.CompressedSize64
			}
			return fmt.Errorf("%w: its entries uncompress to more than limits.body_bytes (%d bytes) from %d compressed; raise limits.body_bytes if the layer is really that large: %w",
				ErrZipBomb, limit, compressed, &feature.LimitError{Name: "body_bytes", Max: limit, Where: "the zip's entries uncompressed"})
		}
	}
	return nil
}

// shpLayer is one Shapefile in a zip: its parts by extension (".shp",
// ".shx", ".dbf", ".prj", ".cpg").
type shpLayer struct {
	name  string
	parts map[string]*zip.File
}

// ignored are entries no layer is made of: macOS resource forks and
// folders.
func ignored(f *zip.File) bool {
	n := f.Name
	return strings.HasSuffix(n, "/") || strings.HasPrefix(n, "__MACOSX/") || strings.HasPrefix(path.Base(n), "._")
}

// shapefileLayers finds the zip's Shapefiles, in a folder or not: each
// .shp and the parts beside it with the same name (case aside). A layer is
// named by its .shp's name without the extension, or by its path without
// it when two folders hold Shapefiles of the same name.
func shapefileLayers(files []*zip.File) []shpLayer {
	byStem := make(map[string]*shpLayer)
	var stems []string
	for _, f := range files {
		if ignored(f) {
			continue
		}
		ext := strings.ToLower(path.Ext(f.Name))
		stem := strings.ToLower(strings.TrimSuffix(f.Name, path.Ext(f.Name)))
		l := byStem[stem]
		if l == nil {
			l = &shpLayer{parts: make(map[string]*zip.File)}
			byStem[stem] = l
			stems = append(stems, stem)
		}
		l.parts[ext] = f
	}
	var out []shpLayer
	base := make(map[string]int)
	for _, s := range stems {
		if shp := byStem[s].parts[".shp"]; shp != nil {
			byStem[s].name = strings.TrimSuffix(path.Base(shp.Name), path.Ext(shp.Name))
			base[strings.ToLower(byStem[s].name)]++
			out = append(out, *byStem[s])
		}
	}
	for i := range out {
		if base[strings.ToLower(out[i].name)] > 1 {
			shp := out[i].parts[".shp"].Name
			out[i].name = strings.TrimSuffix(shp, path.Ext(shp))
		}
	}
	slices.SortFunc(out, func(a, b shpLayer) int { return strings.Compare(a.name, b.name) })
	return out
}

// zipShapefile is a Shapefile read from a zip's entries.
type zipShapefile struct {
	*shapefile.Reader
	zr     *zip.ReadCloser
	open   []io.Closer
	layers []string
}

func (z *zipShapefile) Layers() []string { return z.layers }

func (z *zipShapefile) Close() error {
	for _, c := range z.open {
		c.Close()
	}
	return z.zr.Close()
}

// openShapefile streams layer l's .shp, .shx and .dbf from the zip side
// by side; a part missing is named.
func openShapefile(zr *zip.ReadCloser, l shpLayer, layers []string, o OpenOptions) (FileReader, error) {
	for _, ext := range []string{".shx", ".dbf"} {
		if l.parts[ext] == nil {
			return nil, fmt.Errorf("layer %s: %s has no %s beside it in the zip: a Shapefile needs its .shp, .shx and .dbf", l.name, l.parts[".shp"].Name, ext)
		}
	}
	z := &zipShapefile{zr: zr, layers: layers}
	stream := func(ext string) (io.Reader, error) {
		rc, err := l.parts[ext].Open()
		if err != nil {
			return nil, fmt.Errorf("layer %s: %s: %w", l.name, l.parts[ext].Name, err)
		}
		z.open = append(z.open, rc)
		return bufio.NewReaderSize(rc, 64<<10), nil
	}
	small := func(ext string) ([]byte, error) {
		f := l.parts[ext]
		if f == nil {
			return nil, nil
		}
		if f.UncompressedSize64 > 64<<10 {
			return nil, fmt.Errorf("layer %s: %s of %d bytes: not a %s", l.name, f.Name, f.UncompressedSize64, ext)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("layer %s: %s: %w", l.name, f.Name, err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			return nil, fmt.Errorf("layer %s: %s: %w", l.name, f.Name, err)
		}
		return b, nil
	}
	files := shapefile.Files{SHPSize: int64(l.parts[".shp"].UncompressedSize64), SHXSize: int64(l.parts[".shx"].UncompressedSize64)}
	var err error
	fail := func(err error) (FileReader, error) {
		for _, c := range z.open {
			c.Close()
		}
		return nil, err
	}
	if files.SHP, err = stream(".shp"); err != nil {
		return fail(err)
	}
	if files.SHX, err = stream(".shx"); err != nil {
		return fail(err)
	}
	if files.DBF, err = stream(".dbf"); err != nil {
		return fail(err)
	}
	if files.PRJ, err = small(".prj"); err != nil {
		return fail(err)
	}
	if files.CPG, err = small(".cpg"); err != nil {
		return fail(err)
	}
	r, err := shapefile.NewReader(files, shapefile.Options{Encoding: o.Encoding, SRID: o.SRID, IDProperty: o.IDProperty, Limits: o.Limits})
	if err != nil {
		return fail(fmt.Errorf("layer %s: %w", l.name, err))
	}
	z.Reader = r
	return z, nil
}

// dataExts are the extensions of files a zip may hold instead of a
// Shapefile.
var dataExts = []string{".gpkg", ".fgb", ".geojson", ".json", ".csv"}

// openInner reads a zip that holds no Shapefile: its one file of another
// format (or the one named by layer:), copied out to a temporary file
// that Close removes.
func openInner(zr *zip.ReadCloser, o OpenOptions) (FileReader, error) {
	var cands []*zip.File
	var all []string
	for _, f := range zr.File {
		if ignored(f) {
			continue
		}
		all = append(all, f.Name)
		if hasExt(f.Name, dataExts...) {
			cands = append(cands, f)
		}
	}
	if o.Layer != "" && len(cands) > 1 {
		cands = slices.DeleteFunc(cands, func(f *zip.File) bool {
			b := path.Base(f.Name)
			return !strings.EqualFold(strings.TrimSuffix(b, path.Ext(b)), o.Layer) && !strings.EqualFold(f.Name, o.Layer)
		})
	}
	switch len(cands) {
	case 0:
		return nil, fmt.Errorf("the zip holds no Shapefile (.shp) nor a GeoPackage, FlatGeobuf, GeoJSON or CSV file: %s", listed(all))
	case 1:
	default:
		names := make([]string, len(cands))
		for i, f := range cands {
			names[i] = f.Name
		}
		return nil, fmt.Errorf("the zip holds %d data files (%s): choose one with layer:", len(cands), strings.Join(names, ", "))
	}
	tmp, err := extract(cands[0], o.TempDir)
	if err != nil {
		return nil, err
	}
	zr.Close()
	inner := o
	inner.Name = cands[0].Name
	fr, err := openLocal(tmp, "auto", inner)
	if err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("%s in the zip: %w", cands[0].Name, err)
	}
	return &removeOnClose{FileReader: fr, path: tmp}, nil
}

func listed(names []string) string {
	if len(names) == 0 {
		return "it is empty"
	}
	if len(names) > 10 {
		names = append(names[:10:10], "…")
	}
	return "it holds " + strings.Join(names, ", ")
}

// extract copies f out of its zip into a temporary file.
func extract(f *zip.File, dir string) (string, error) {
	rc, err := f.Open()
	if err != nil {
		return "", fmt.Errorf("%s in the zip: %w", f.Name, err)
	}
	defer rc.Close()
	out, err := os.CreateTemp(dir, "ingestd-file-*"+path.Ext(f.Name))
	if err != nil {
		return "", fmt.Errorf("a temporary file for %s: %w", f.Name, err)
	}
	if _, err := io.Copy(out, rc); err != nil {
		out.Close()
		os.Remove(out.Name())
		return "", fmt.Errorf("%s in the zip: %w", f.Name, err)
	}
	if err := out.Close(); err != nil {
		os.Remove(out.Name())
		return "", fmt.Errorf("a temporary file for %s: %w", f.Name, err)
	}
	return out.Name(), nil
}

// removeOnClose removes a file copied out of a zip when its reader closes.
type removeOnClose struct {
	FileReader
	path string
}

func (r *removeOnClose) Close() error {
	err := r.FileReader.Close()
	os.Remove(r.path)
	return err
}
