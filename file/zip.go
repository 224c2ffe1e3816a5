package file

import (
	"archive/zip"
	"bufio"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
// when it holds several), a layer of the File Geodatabase it holds, or
// the one file of another format it holds.
func openZip(p string, o OpenOptions) (FileReader, error) {
	zr, err := zip.OpenReader(p)
	if err != nil {
		// archive/zip's words (and, for a file it could not open, the
		// temporary file's path) say nothing an operator can act on.
		return nil, errors.New("the zip is damaged or cut short: its central directory cannot be read")
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
	if zipHoldsGDB(zr.File) {
		switch {
		case len(layers) == 0:
			return openZippedGDB(zr, o)
		case o.format != FormatShapefile:
			return openShapefileOrGDB(zr, layers, o)
		}
	}
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
	// drain are the .shx and .dbf: the reader stops short of their ends
	// (it reads the .shx's header and the .dbf's records, not its end
	// mark), and a zip entry's CRC-32 is checked only at its end.
	drain []io.Reader
}

func (z *zipShapefile) Layers() []string { return z.layers }

// Next is the Shapefile's next feature; after the last, the .shx and .dbf
// are read to their ends, so that a damaged one fails the layer as a
// damaged .shp does.
func (z *zipShapefile) Next() (*feature.Feature, error) {
	f, err := z.Reader.Next()
	if err != io.EOF {
		return f, err
	}
	for _, r := range z.drain {
		if _, err := io.Copy(io.Discard, r); err != nil {
			return nil, err
		}
	}
	z.drain = nil
	return nil, io.EOF
}

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
		rc, err := openEntry(l.parts[ext])
		if err != nil {
			return nil, fmt.Errorf("layer %s: %w", l.name, err)
		}
		z.open = append(z.open, rc)
		if ext != ".shp" {
			z.drain = append(z.drain, rc)
		}
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
		rc, err := openEntry(f)
		if err != nil {
			return nil, fmt.Errorf("layer %s: %w", l.name, err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			return nil, fmt.Errorf("layer %s: %w", l.name, err)
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
var dataExts = []string{".gpkg", ".fgb", ".geojson", ".json", ".csv", ".gml"}

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
		return nil, fmt.Errorf("the zip holds no Shapefile (.shp), File Geodatabase (*.gdb folder) nor a GeoPackage, FlatGeobuf, GeoJSON, GML or CSV file: %s", listed(all))
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
	format := o.format
	if format == "" || format == FormatShapefile || format == FormatFileGDB {
		format = "auto"
	}
	fr, err := openLocal(tmp, format, inner)
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
	rc, err := openEntry(f)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	out, err := os.CreateTemp(dir, "ingestd-file-*"+path.Ext(f.Name))
	if err != nil {
		return "", fmt.Errorf("a temporary file for %s: %w", f.Name, err)
	}
	if _, err := io.Copy(out, rc); err != nil {
		out.Close()
		os.Remove(out.Name())
		var ee *entryError
		if errors.As(err, &ee) {
			return "", err
		}
		return "", fmt.Errorf("a temporary file for %s: %w", f.Name, redactPath(err))
	}
	if err := out.Close(); err != nil {
		os.Remove(out.Name())
		return "", fmt.Errorf("a temporary file for %s: %w", f.Name, redactPath(err))
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

// openEntry opens zip entry f for reading; its errors, and those of its
// reads, are *entryError: the entry named and what is wrong with it in
// ingestd's words (archive/zip's name no entry, and a read at an offset
// its damaged directory gives names the temporary file).
func openEntry(f *zip.File) (io.ReadCloser, error) {
	if f.Flags&0x1 != 0 {
		return nil, &entryError{name: f.Name, state: "is encrypted",
			why: "it is password-protected, and ingestd reads no encrypted entry: ask the publisher for an unprotected file"}
	}
	rc, err := f.Open()
	if err != nil {
		return nil, newEntryError(f, err, true)
	}
	return &entryReader{rc: rc, f: f}, nil
}

// entryReader reads a zip entry, turning its errors into *entryError.
type entryReader struct {
	rc io.ReadCloser
	f  *zip.File
}

func (r *entryReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	if err != nil && err != io.EOF {
		err = newEntryError(r.f, err, false)
	}
	return n, err
}

func (r *entryReader) Close() error { return r.rc.Close() }

// entryError is a zip entry that cannot be read whole: its name, its
// state ("is damaged" when empty) and why.
type entryError struct {
	name, state, why string
	err              error
}

func (e *entryError) Error() string {
	state := e.state
	if state == "" {
		state = "is damaged"
	}
	return fmt.Sprintf("%s in the zip %s: %s", e.name, state, e.why)
}

// Unwrap is the cause as archive/zip or compress/flate reported it, for
// errors.Is; the message does not repeat it.
func (e *entryError) Unwrap() error { return e.err }

// newEntryError says what err, met opening (atOpen) or reading entry f,
// means.
func newEntryError(f *zip.File, err error, atOpen bool) error {
	if _, ok := err.(*entryError); ok {
		return err
	}
	var le *feature.LimitError
	if errors.As(err, &le) {
		return err
	}
	e := &entryError{name: f.Name, err: err}
	var corrupt flate.CorruptInputError
	var pathErr *fs.PathError
	switch {
	case errors.Is(err, zip.ErrChecksum):
		e.why = "its CRC-32 does not match its bytes"
	case errors.Is(err, zip.ErrAlgorithm):
		e.state = "cannot be read"
		e.why = fmt.Sprintf("it is compressed with method %d; ingestd reads stored and deflated entries", f.Method)
	case errors.Is(err, zip.ErrFormat) && atOpen:
		e.why = "its local header is broken"
	case errors.Is(err, zip.ErrFormat):
		e.why = fmt.Sprintf("it inflates to more than the %d bytes its directory declares", f.UncompressedSize64)
	case errors.As(err, &corrupt):
		e.why = fmt.Sprintf("its compressed bytes are corrupt (at byte %d)", int64(corrupt))
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		e.why = "it is cut short"
	case errors.As(err, &pathErr):
		// A read outside the file: the directory places the entry
		// before the file's start or past its end.
		e.why = "the zip's directory places it outside the file"
	default:
		e.why = "it cannot be read"
	}
	return e
}

// redactPath is err without the path of an *fs.PathError: a temporary
// file's name is nothing to show.
func redactPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}
