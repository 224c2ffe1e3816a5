package file

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jlaffaye/ftp"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/source"
)

// An ftp:// URL is downloaded with github.com/jlaffaye/ftp, one logical
// call through the origin's breaker (ftp://host:21), as every HTTP request
// is: the registry's retries, pacing, per-origin and global in-flight slots
// apply to each attempt, and a refusal by an open breaker or a call that
// failed after its retries parks the poll as HTTP's do. An attempt is
// connect, log in (the URL's user and password, else anonymous), MDTM and
// SIZE, RETR into the temporary file, QUIT.
//
// MDTM and SIZE are the file's validators: when the feed's last applied
// poll recorded the same pair, the file is not downloaded and the poll is
// not_modified, as an HTTP 304 is. A server without MDTM gives none, and
// every poll downloads. SIZE also proves the transfer whole: a data
// connection that ends early is a failed attempt (the origin's), never a
// shorter file read as if it were complete.

// ErrNoFile is wrapped by the error of an ftp:// download whose path the
// server has no file at (550 to RETR).
var ErrNoFile = errors.New("no such file on the server")

// ErrFTPShort is wrapped by the error of an FTP transfer that delivered
// fewer or more bytes than SIZE announced: a data connection cut early,
// or a file replaced during the download.
var ErrFTPShort = errors.New("transfer did not deliver the file's size")

// anonymousPassword is sent with the user "anonymous" when the URL names
// no user: by convention an e-mail address, which identifies nobody here.
const anonymousPassword = "ingestd@"

// isFTP reports whether u is an ftp:// URL.
func isFTP(u *url.URL) bool { return strings.EqualFold(u.Scheme, "ftp") }

// ftpPath is the file's path as the server is asked for it: the URL's
// path without its leading slash, which RFC 1738 makes relative to the
// login directory (the root of an anonymous login), as curl reads it; a
// path that starts with %2F is absolute.
func ftpPath(u *url.URL) string {
	return strings.TrimPrefix(u.Path, "/")
}

// ftpAddr is u's host and port, the port 21 when the URL has none.
func ftpAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "21"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// ftpVersion is the validator of a file from its MDTM time and SIZE (-1:
// the server did not say), "" when the server gave no time.
func ftpVersion(mtime time.Time, size int64) string {
	if mtime.IsZero() {
		return ""
	}
	return fmt.Sprintf("ftp mdtm=%s size=%d", mtime.UTC().Format("20060102150405"), size)
}

// ftpGet is one logical download of an ftp:// URL.
type ftpGet struct {
	u        *url.URL
	redacted string
	path     string
	// known is the validator of the copy the feed has ("": none).
	known   string
	timeout time.Duration
	limit   int64
	tmp     *os.File
	// Set by the attempt that succeeded.
	dl          download
	notModified bool
}

// fetchFTP downloads layer's ftp:// file at u into tmp and returns what
// the download learned and the path of the file to read (tmp's, or the
// file a gzip uncompressed to, for the caller to remove); its error is
// httpcall.ErrNotModified when the file's validators are those of
// layer.Validators.
func (c *Client) fetchFTP(ctx context.Context, layer source.Layer, u *url.URL, tmp *os.File, redacted string) (download, string, error) {
	limit := layer.Limits.BodyBytes
	if limit <= 0 {
		limit = httpcall.DefaultMaxBodyBytes
	}
	g := &ftpGet{u: u, redacted: redacted, path: ftpPath(u), known: layer.Validators.Version,
		timeout: ftpTimeout(layer.RequestTimeout), limit: limit, tmp: tmp}
	switch err := c.downloadFTP(ctx, g); {
	case err != nil:
		return g.dl, tmp.Name(), err
	case g.notModified:
		return g.dl, tmp.Name(), httpcall.ErrNotModified
	}
	p, err := gunzipFTP(tmp, c.tempDir, limit)
	if err != nil {
		return g.dl, tmp.Name(), err
	}
	return g.dl, p, nil
}

// downloadFTP downloads g's file into g.tmp as one logical call through
// the origin's breaker (a single attempt without a registry).
func (c *Client) downloadFTP(ctx context.Context, g *ftpGet) error {
	fn := func(actx context.Context, _ int) breaker.Result {
		g.dl, g.notModified = download{}, false
		return c.attemptFTP(actx, g)
	}
	if c.breakers == nil {
		return fn(ctx, 1).Err
	}
	return c.breakers.Do(ctx, breaker.Origin(g.u), fn)
}

// attemptFTP is one attempt: connect, log in, MDTM and SIZE, then RETR
// into g.tmp unless the validators match. Every connection it opens is
// closed when ctx ends or the attempt's timeout passes, which unblocks a
// transfer stuck on a silent server.
func (c *Client) attemptFTP(ctx context.Context, g *ftpGet) breaker.Result {
	actx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	a := &ftpAttempt{g: g, ctx: ctx, actx: actx}
	conns := &ftpConns{}
	stop := context.AfterFunc(actx, conns.closeAll)
	defer func() {
		stop()
		conns.closeAll()
	}()
	sc, err := ftp.Dial(ftpAddr(g.u), ftp.DialWithDialFunc(conns.dialer(actx)))
	if err != nil {
		return a.judge("connecting", err)
	}
	defer sc.Quit()
	user, pass := "anonymous", anonymousPassword
	if g.u.User != nil {
		user = g.u.User.Username()
		if p, ok := g.u.User.Password(); ok {
			pass = p
		}
	}
	if err := sc.Login(user, pass); err != nil {
		if code, _ := reply(err); code == 0 && !isNetwork(err) {
			// jlaffaye/ftp hands a refused USER over as the reply's text
			// alone, without its code: the server answered, and refused.
			err = &ReplyError{Msg: err.Error()}
		}
		return a.judge("logging in", err)
	}
	version, size, r := a.stat(sc)
	switch {
	case r != nil:
		return *r
	case version != "" && version == g.known:
		g.notModified = true
		g.dl.version = version
		return breaker.Result{Outcome: breaker.Success}
	case size > g.limit:
		return breaker.Result{Outcome: breaker.Success, Err: &feature.LimitError{Name: "body_bytes", Max: g.limit,
			Where: fmt.Sprintf("%s has %d bytes (SIZE)", g.redacted, size)}}
	}
	return a.retrieve(sc, version, size)
}

// ftpAttempt is one attempt's state for the steps that judge its errors.
type ftpAttempt struct {
	g *ftpGet
	// ctx is the call's, as the breaker passed it; actx the attempt's,
	// bounded by its timeout.
	ctx, actx context.Context
}

// failure is err as the origin's failure, unless the caller's context
// ended (Ignored, wrapping the context's error); after the attempt's own
// timeout it says so.
func (a *ftpAttempt) failure(err error) breaker.Result {
	if a.ctx.Err() != nil {
		// The connection was closed because the caller's context ended.
		return breaker.Result{Outcome: breaker.Ignored, Err: fmt.Errorf("%w (%w)", err, a.ctx.Err())}
	}
	if errors.Is(a.actx.Err(), context.DeadlineExceeded) {
		return breaker.Result{Outcome: breaker.Failure, Err: fmt.Errorf("attempt timed out after %s: %w", a.g.timeout, err)}
	}
	return breaker.Result{Outcome: breaker.Failure, Err: err}
}

// judge is the result of an error of the conversation at step: a
// permanent reply (5xx, or a refusal without its code) is the feed's (the
// server answered: a Success with the error, not retried), a transient
// one (4xx) or a broken connection the origin's failure.
func (a *ftpAttempt) judge(step string, err error) breaker.Result {
	err = a.g.errorOf(step, err)
	var re *ReplyError
	if errors.As(err, &re) && (re.Code == 0 || re.Code >= 500) {
		return breaker.Result{Outcome: breaker.Success, Err: err}
	}
	return a.failure(err)
}

// stat asks MDTM and SIZE and returns the file's validator and size (-1:
// the server did not say), or the attempt's result when asking failed.
// A permanent refusal (not implemented, not allowed, no such file) leaves
// the file without that validator, and RETR says whether it is there.
func (a *ftpAttempt) stat(sc *ftp.ServerConn) (string, int64, *breaker.Result) {
	var mtime time.Time
	if sc.IsGetTimeSupported() {
		t, err := sc.GetTime(a.g.path)
		switch code, _ := reply(err); {
		case err == nil:
			mtime = t
		case code < 500:
			r := a.judge("MDTM", err)
			return "", 0, &r
		}
	}
	size := int64(-1)
	n, err := sc.FileSize(a.g.path)
	var ne *strconv.NumError
	switch code, _ := reply(err); {
	case err == nil && n >= 0:
		size = n
	case err == nil, code >= 500, errors.As(err, &ne):
		// None, or not a number: no validator.
	default:
		r := a.judge("SIZE", err)
		return "", 0, &r
	}
	return ftpVersion(mtime, size), size, nil
}

// retrieve is RETR into the temporary file (truncated first: a retry
// starts over), the transfer proved whole by the server's 226 and by
// SIZE, when the server gave it.
func (a *ftpAttempt) retrieve(sc *ftp.ServerConn, version string, size int64) breaker.Result {
	g := a.g
	resp, err := sc.Retr(g.path)
	if err != nil {
		return a.judge("RETR", err)
	}
	defer resp.Close()
	if err := g.tmp.Truncate(0); err != nil {
		return breaker.Result{Outcome: breaker.Ignored, Err: fmt.Errorf("the temporary file: %w", err)}
	}
	if _, err := g.tmp.Seek(0, io.SeekStart); err != nil {
		return breaker.Result{Outcome: breaker.Ignored, Err: fmt.Errorf("the temporary file: %w", err)}
	}
	body := &ftpBody{r: resp, limit: g.limit, where: g.redacted}
	got, err := io.Copy(g.tmp, body)
	switch {
	case err != nil && body.over:
		return breaker.Result{Outcome: breaker.Success, Err: err}
	case err != nil && body.err == nil && a.ctx.Err() == nil && a.actx.Err() == nil:
		// The disk, not the origin.
		return breaker.Result{Outcome: breaker.Ignored, Err: fmt.Errorf("writing the download to %s: %w", g.tmp.Name(), err)}
	case err != nil:
		return a.failure(fmt.Errorf("RETR %s: the data connection failed after %d bytes: %w", g.redacted, got, netError(err)))
	}
	// The server's word on the transfer (226, or 426 when it saw the data
	// connection break), then the bytes counted against SIZE: a data
	// connection closed early looks like a whole file to the reader.
	if err := resp.Close(); err != nil {
		return a.judge("RETR", err)
	}
	if size >= 0 && got != size {
		return a.failure(fmt.Errorf("RETR %s: %w: %d of %d bytes", g.redacted, ErrFTPShort, got, size))
	}
	g.dl = download{bytes: got, version: version}
	return breaker.Result{Outcome: breaker.Success}
}

// errorOf is err, met at step, in ingestd's words: a reply as a
// *ReplyError (550 to RETR wrapping ErrNoFile), anything else as a
// failure to reach or talk to the server.
func (g *ftpGet) errorOf(step string, err error) error {
	var re *ReplyError
	if errors.As(err, &re) {
		re.URL, re.Step = g.redacted, step
		return re
	}
	if code, msg := reply(err); code != 0 {
		re := &ReplyError{URL: g.redacted, Step: step, Code: code, Msg: msg}
		if step == "RETR" && code == 550 {
			re.Err = ErrNoFile
		}
		return re
	}
	return fmt.Errorf("%s %s: %w", step, g.redacted, netError(err))
}

// ReplyError is an FTP server's negative reply: a 4xx (transient: the
// origin's failure, retried) or a 5xx (permanent: the feed's, not retried);
// Code 0 is a refused login whose code the client did not keep (the feed's).
type ReplyError struct {
	// URL is the file's URL, redacted; Step what was asked (logging in,
	// MDTM, SIZE, RETR).
	URL, Step string
	// Code and Msg are the reply, as the server wrote it.
	Code int
	Msg  string
	// Err is ErrNoFile for a 550 to RETR.
	Err error
}

func (e *ReplyError) Error() string {
	if errors.Is(e.Err, ErrNoFile) {
		return fmt.Sprintf("RETR %s: %v (%d %s)", e.URL, ErrNoFile, e.Code, e.Msg)
	}
	if e.Code == 0 {
		return fmt.Sprintf("%s %s: the FTP server refused: %s", e.Step, e.URL, e.Msg)
	}
	return fmt.Sprintf("%s %s: the FTP server answered %d %s", e.Step, e.URL, e.Code, e.Msg)
}

func (e *ReplyError) Unwrap() error { return e.Err }

// reply is the code and text of an FTP reply error (0 when err is none).
func reply(err error) (int, string) {
	var te *textproto.Error
	if errors.As(err, &te) {
		return te.Code, strings.TrimSpace(te.Msg)
	}
	return 0, ""
}

// isNetwork reports whether err is the connection's, not the server's
// answer.
func isNetwork(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

// netError is err without jlaffaye/ftp's or net's wording where it adds
// nothing: the cause of a failed dial or read.
func netError(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return fmt.Errorf("%s %s: %w", oe.Op, oe.Addr, oe.Err)
	}
	return err
}

// ftpConns are the connections of one attempt, control and data, all
// closed by closeAll: jlaffaye/ftp reads without a context once dialled.
type ftpConns struct {
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

// dialer dials through ctx and keeps the connection for closeAll.
func (t *ftpConns) dialer(ctx context.Context) func(network, addr string) (net.Conn, error) {
	return func(network, addr string) (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.closed {
			conn.Close()
			return nil, net.ErrClosed
		}
		t.conns = append(t.conns, conn)
		return conn, nil
	}
}

// closeAll closes every connection, and any dialled after.
func (t *ftpConns) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for _, c := range t.conns {
		c.Close()
	}
	t.conns = nil
}

// ftpBody is a transfer's data, bounded by limits.body_bytes (over: a
// *feature.LimitError, the feed's), keeping the connection's error apart
// from the disk's.
type ftpBody struct {
	r     io.Reader
	limit int64
	where string
	read  int64
	err   error
	over  bool
}

func (b *ftpBody) Read(p []byte) (int, error) {
	if room := b.limit - b.read + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	if b.read > b.limit {
		b.over = true
		return n - int(b.read-b.limit), &feature.LimitError{Name: "body_bytes", Max: b.limit, Where: b.where}
	}
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

// gunzipFTP returns the path of the file to read: tmp's own, or, when it
// is gzip (a .csv.gz; an HTTP download is gunzipped on the way in), a
// sibling it is decompressed into, bounded by limit.
func gunzipFTP(tmp *os.File, dir string, limit int64) (string, error) {
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("the temporary file: %w", err)
	}
	br := bufio.NewReader(tmp)
	if magic, _ := br.Peek(2); len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
		return tmp.Name(), nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return "", fmt.Errorf("the file is gzip but does not uncompress: %w", err)
	}
	out, err := os.CreateTemp(dir, "ingestd-file-*")
	if err != nil {
		return "", fmt.Errorf("a temporary file for the download: %w", err)
	}
	defer out.Close()
	_, err = io.Copy(out, &ftpBody{r: zr, limit: limit, where: "the file gunzipped"})
	if err == nil {
		err = out.Close()
	}
	if err != nil {
		os.Remove(out.Name())
		var le *feature.LimitError
		if errors.As(err, &le) {
			return "", err
		}
		return "", fmt.Errorf("the file is gzip but does not uncompress: %w", err)
	}
	return out.Name(), nil
}

// ftpTimeout is the attempt's bound: the feed's request timeout, else
// httpcall's default, from connecting to the last byte, as an HTTP
// download's.
func ftpTimeout(d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return httpcall.DefaultRequestTimeout
}

// checkFTP checks an ftp:// feed's url: it names a file. Headers are
// HTTP's: the feed's own are ignored with a warning, its jurisdiction's
// are not sent.
func checkFTP(f *kindconf.Feed, u *url.URL) {
	if ftpPath(u) == "" || strings.HasSuffix(u.Path, "/") {
		f.Errorf(f.At("url"), f.Field("url"), "an ftp:// url names a file, not a folder")
		f.URL = ""
	}
	if n, ok := f.Map.Get("headers"); ok {
		f.Warnf(n, f.Field("headers"), "ignored for an ftp:// url (headers are HTTP's)")
	}
	f.Headers = nil
}
