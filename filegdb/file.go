package filegdb

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// spool says where a file the fs.FS cannot read at offsets is copied
// ("" for the system's temporary directory) and how large it may be.
type spool struct {
	dir   string
	limit int64
}

// file is one file of the geodatabase, read at offsets: a .gdbtable's rows
// are found through its .gdbtablx, never by reading the table whole.
type file struct {
	name string
	r    io.ReaderAt
	size int64
	// closers run on close: the fs.File, and the removal of a spooled copy.
	closers []func() error
}

// openFile opens name in fsys for reading at offsets. A file the fs.FS
// can read at offsets (a directory's os.File, a stored zip entry) is read
// in place; one it cannot (a deflated zip entry is a stream) is copied
// once to a temporary file, at most limit bytes, so that memory stays
// bounded by a row whatever the table's size.
func openFile(fsys fs.FS, name string, sp spool) (*file, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if ra, ok := f.(io.ReaderAt); ok {
		return &file{name: name, r: ra, size: st.Size(), closers: []func() error{f.Close}}, nil
	}
	defer f.Close()
	tmp, err := os.CreateTemp(sp.dir, "ingestd-filegdb-*")
	if err != nil {
		return nil, fmt.Errorf("spooling %s: %w", name, err)
	}
	cleanup := func() error { return errors.Join(tmp.Close(), os.Remove(tmp.Name())) }
	limit := sp.limit
	n, err := io.Copy(tmp, io.LimitReader(f, limit+1))
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("spooling %s: %w", name, err)
	}
	if n > limit {
		cleanup()
		return nil, fmt.Errorf("%s is larger than %d bytes, the most a file of the geodatabase may hold (limits.body_bytes)", name, limit)
	}
	return &file{name: name, r: tmp, size: n, closers: []func() error{cleanup}}, nil
}

func (f *file) close() error {
	if f == nil {
		return nil
	}
	var errs []error
	for _, c := range f.closers {
		errs = append(errs, c())
	}
	f.closers = nil
	return errors.Join(errs...)
}

// readAt reads len(p) bytes at off; a read past the end is
// errPastEnd.
func (f *file) readAt(p []byte, off int64) error {
	if off < 0 || off > f.size || int64(len(p)) > f.size-off {
		return errPastEnd
	}
	_, err := f.r.ReadAt(p, off)
	if errors.Is(err, io.EOF) {
		return errPastEnd
	}
	return err
}

var errPastEnd = errors.New("past the end of the file")
