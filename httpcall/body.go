package httpcall

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/ingestd/ingestd/feature"
)

// utf8BOM is the byte order mark some Windows-built servers put before JSON
// and XML. Neither format needs it; both decoders would refuse it.
var utf8BOM = []byte("\xef\xbb\xbf")

// limitedBody counts the bytes read and fails with a *LimitError
// (body_bytes) past limit, without reading more than one byte beyond it.
// It keeps the first error of the reader below other than io.EOF (a
// connection cut, a timeout, a damaged gzip stream) and returns it again on
// every later read. A decoder may report
// such an error as a malformed document; err tells that the bytes did not
// arrive whole, which is the origin's failure and not the feed's content.
type limitedBody struct {
	r     io.Reader
	limit int64
	where string // what the body is, for the LimitError
	read  int64
	err   error
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.read > b.limit {
		return 0, b.tooLarge()
	}
	if b.err != nil {
		// Sticky: a bufio.Reader above hands an error out once and then
		// reads again, and a connection read again after a reset may say
		// EOF, which would turn the reset into an empty or a short body.
		return 0, b.err
	}
	if room := b.limit - b.read + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	if b.read > b.limit {
		return n - int(b.read-b.limit), b.tooLarge()
	}
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

func (b *limitedBody) tooLarge() error {
	return &feature.LimitError{Name: "body_bytes", Max: b.limit, Where: b.where}
}

// maxGzipLayers bounds how many times over a body may be gzipped. Some
// servers gzip a stored .gz file again on the way out, under one
// Content-Encoding: gzip; more than a few layers is no server's accident.
const maxGzipLayers = 3

// decodeContent returns the response body, decompressed when it is gzip.
// The gzip magic number decides, not Content-Encoding, because servers lie
// both ways: some gzip without saying so (a .geojson.gz behind a plain
// URL), and some label a plain body "Content-Encoding: gzip" (which the
// transport's transparent decompression used to report as an empty body).
// No JSON or XML document starts with byte 0x1f, so the magic cannot be
// mistaken; a body labelled gzip that is not is read as sent, with a note
// for the fetch's warnings, because refusing it would fail a layer whose
// bytes are fine.
//
// A body gzipped twice (a .gz file served with gzip on top) is decoded
// layer by layer, up to maxGzipLayers, with a note; each layer's output is
// bounded by limit as the body is, so that layers cannot multiply a bomb.
// A read error before the first bytes of a layer (a reset, a corrupt
// deflate stream, a malformed chunked encoding) is returned as is, not
// taken for an empty body; the caller judges it with readFailure. More
// layers than that are refused with a *DecodeError, the feed's. The bool
// reports whether the body was gzip: its bytes then number other than the
// Content-Length says.
func decodeContent(resp *http.Response, limit int64) (io.Reader, string, bool, error) {
	enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	labelled := !resp.Uncompressed && (enc == "gzip" || enc == "x-gzip")
	br := bufio.NewReaderSize(resp.Body, 512)
	magic, err := peekMagic(br)
	if err != nil {
		return nil, "", false, err
	}
	if !isGzip(magic) {
		note := ""
		if labelled && len(magic) > 0 {
			note = "the server says Content-Encoding " + enc + " but the body is not gzip: read as sent"
		}
		return br, note, false, nil
	}
	for layers := 1; ; layers++ {
		src := io.Reader(br)
		if layers > 1 {
			// The output of the layer above, itself gzip: bounded like
			// the body, since no limit below would see these bytes.
			src = &limitedBody{r: br, limit: limit, where: fmt.Sprintf("response body (gzip layer %d)", layers-1)}
		}
		zr, err := gzip.NewReader(src)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, "", false, gzipError(err)
		}
		br = bufio.NewReaderSize(gzipReader{zr}, 512)
		if magic, err = peekMagic(br); err != nil {
			return nil, "", false, err
		}
		if !isGzip(magic) {
			note := ""
			if layers > 1 {
				note = fmt.Sprintf("the body was gzipped %d times over: decoded each layer", layers)
			}
			return br, note, true, nil
		}
		if layers == maxGzipLayers {
			// Deterministic, and no server's accident: the feed's.
			return nil, "", false, &feature.DecodeError{Format: "gzip", Index: -1,
				Msg: fmt.Sprintf("the body is gzipped more than %d times over (gzip inside gzip); at most %d layers are decoded", maxGzipLayers, maxGzipLayers)}
		}
	}
}

// peekMagic returns the first two bytes of br, fewer when the body is
// shorter, or the read error that came before them.
func peekMagic(br *bufio.Reader) ([]byte, error) {
	magic, err := br.Peek(2)
	if err != nil && err != io.EOF {
		return nil, err
	}
	return magic, nil
}

func isGzip(magic []byte) bool {
	return len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b
}

// gzipReader names gzip as the cause of a corrupt deflate stream, whose
// error ("flate: corrupt input before offset 5") would not say that the
// body was gzip.
type gzipReader struct{ zr *gzip.Reader }

func (g gzipReader) Read(p []byte) (int, error) {
	n, err := g.zr.Read(p)
	if err != nil && err != io.EOF {
		err = gzipError(err)
	}
	return n, err
}

// gzipError says "gzip:" before the errors of compress/flate and an early
// end of the stream, once however many layers they pass through; those of
// compress/gzip say gzip already, and a transport error is not gzip's.
func gzipError(err error) error {
	var named *gzipStreamError
	var corrupt flate.CorruptInputError
	var internal flate.InternalError
	switch {
	case errors.As(err, &named):
		return err
	case errors.As(err, &corrupt), errors.As(err, &internal), err == io.ErrUnexpectedEOF:
		return &gzipStreamError{err: err}
	}
	return err
}

// gzipStreamError is an error of a gzip stream's content, named as such.
type gzipStreamError struct{ err error }

func (e *gzipStreamError) Error() string { return "gzip: " + e.err.Error() }
func (e *gzipStreamError) Unwrap() error { return e.err }
