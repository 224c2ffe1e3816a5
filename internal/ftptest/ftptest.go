// Package ftptest gives the ftp:// tests the real FTP server that
// scripts/ftp.sh starts (Debian's vsftpd on loopback, anonymous and
// read-only), a fresh folder of it per test, and a loopback proxy in front
// of it that counts the commands the client sends and can cut a transfer
// mid-file, which no real server does on request.
package ftptest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ingestd/ingestd/internal/interoptest"
)

// Server is the FTP server's address and the folder it serves.
type Server struct {
	// Addr is host:port of its control connection.
	Addr string
	// Root is the folder served as its anonymous root.
	Root string
}

// Start says how to start the server, for the message of a test that
// cannot reach it.
const Start = "start it with `export INGESTD_FTP_URL=$(scripts/ftp.sh start)` from the repo root"

// Real returns the server from INGESTD_FTP_URL (default
// ftp://127.0.0.1:INGESTD_FTP_PORT or 18121/) and INGESTD_FTP_ROOT
// (default .ftp/root at the module's root), when it greets; otherwise it
// fails or skips t (interoptest.Unavailable).
func Real(t testing.TB) Server {
	t.Helper()
	raw := os.Getenv("INGESTD_FTP_URL")
	if raw == "" {
		port := os.Getenv("INGESTD_FTP_PORT")
		if port == "" {
			port = "18121"
		}
		raw = "ftp://127.0.0.1:" + port + "/"
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "ftp" || u.Port() == "" {
		t.Fatalf("INGESTD_FTP_URL %q: want ftp://host:port/", raw)
	}
	root := os.Getenv("INGESTD_FTP_ROOT")
	if root == "" {
		root = filepath.Join(interoptest.ModuleRoot(), ".ftp", "root")
	}
	s := Server{Addr: u.Host, Root: root}
	if err := greets(s.Addr); err != nil {
		interoptest.Unavailable(t, fmt.Sprintf("no FTP server at %s: %v; %s", raw, err, Start))
	}
	if _, err := os.Stat(root); err != nil {
		interoptest.Unavailable(t, fmt.Sprintf("the FTP server's folder: %v (set INGESTD_FTP_ROOT)", err))
	}
	return s
}

// greets reports why the server at addr did not send its 220 greeting.
func greets(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "220") {
		return fmt.Errorf("greeting %q", strings.TrimSpace(line))
	}
	fmt.Fprintf(c, "QUIT\r\n")
	return nil
}

// Folder makes a fresh folder of the server's, removed at t's cleanup, and
// returns its path on disk and its name on the server.
func (s Server) Folder(t testing.TB) (dir, name string) {
	t.Helper()
	dir, err := os.MkdirTemp(s.Root, "t-")
	if err != nil {
		interoptest.Unavailable(t, fmt.Sprintf("a folder in the FTP server's %s: %v", s.Root, err))
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// Readable by the server's anonymous user, not writable by it.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, filepath.Base(dir)
}

// Put writes a file of the folder dir, readable by the server, with its
// modification time set to mtime (MDTM has a second's precision: a test
// that rewrites a file gives it another second).
func Put(t testing.TB, dir, name string, b []byte, mtime time.Time) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// Proxy relays a client's FTP sessions to a server: the control
// connection line by line (counting the commands), and each passive data
// connection through a listener of its own, whose address replaces the
// server's in the 227 and 229 replies. CutAfter > 0 closes every data
// connection from the server after that many bytes, cleanly, as a
// connection cut on the way would look to a client. Stall holds every
// later data connection open and silent after those bytes (none when
// CutAfter is 0), as a server that stopped sending would, and signals
// each on Stalled.
type Proxy struct {
	ln     net.Listener
	target string

	mu       sync.Mutex
	cutAfter int64
	stall    bool
	commands map[string]int
	stalled  chan struct{}
}

// NewProxy starts a proxy to the server at target (host:port) on a
// loopback port; t's cleanup stops it.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, commands: map[string]int{}, stalled: make(chan struct{}, 16)}
	t.Cleanup(func() { ln.Close() })
	go p.serve()
	return p
}

// Addr is the proxy's host:port, for an ftp:// URL.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// CutAfter makes every later data connection end after n bytes (0: whole).
func (p *Proxy) CutAfter(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutAfter = n
}

// Stall makes every later data connection fall silent after CutAfter's
// bytes, and stay open (false: relay or cut).
func (p *Proxy) Stall(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stall = on
}

// Stalled receives once for each data connection a stall holds.
func (p *Proxy) Stalled() <-chan struct{} { return p.stalled }

// Count is how many times the client sent command (upper case: "RETR").
func (p *Proxy) Count(command string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.commands[command]
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.session(c)
	}
}

// passiveReply matches a 227 (h1,h2,h3,h4,p1,p2) or 229 (|||port|) reply.
var passiveReply = regexp.MustCompile(`^(227 .*\()(\d+,\d+,\d+,\d+),(\d+),(\d+)(\).*)$|^(229 .*\(\|\|\|)(\d+)(\|\).*)$`)

// session relays one control connection.
func (p *Proxy) session(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	go func() {
		// Commands, counted on the way.
		r := bufio.NewReader(client)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				verb, _, _ := strings.Cut(strings.TrimSpace(line), " ")
				p.mu.Lock()
				p.commands[strings.ToUpper(verb)]++
				p.mu.Unlock()
				if _, werr := io.WriteString(server, line); werr != nil {
					return
				}
			}
			if err != nil {
				server.Close()
				return
			}
		}
	}()
	// Replies, a passive one pointed at a data relay.
	r := bufio.NewReader(server)
	for {
		line, err := r.ReadString('\n')
		if line != "" {
			line = p.relayPassive(line)
			if _, werr := io.WriteString(client, line); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// relayPassive rewrites a passive-mode reply to a data relay of its own
// that forwards to the server's port; other lines pass as they are.
func (p *Proxy) relayPassive(line string) string {
	m := passiveReply.FindStringSubmatch(strings.TrimRight(line, "\r\n"))
	if m == nil {
		return line
	}
	host, _, _ := net.SplitHostPort(p.target)
	var port int
	if m[1] != "" {
		p1, _ := strconv.Atoi(m[3])
		p2, _ := strconv.Atoi(m[4])
		port = p1*256 + p2
	} else {
		port, _ = strconv.Atoi(m[7])
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return line
	}
	p.mu.Lock()
	cut, stall := p.cutAfter, p.stall
	p.mu.Unlock()
	go p.relayData(ln, net.JoinHostPort(host, strconv.Itoa(port)), cut, stall)
	mine := ln.Addr().(*net.TCPAddr).Port
	if m[1] != "" {
		return fmt.Sprintf("%s127,0,0,1,%d,%d%s\r\n", m[1], mine/256, mine%256, m[5])
	}
	return fmt.Sprintf("%s%d%s\r\n", m[6], mine, m[8])
}

// relayData accepts one data connection on ln and relays it to target:
// the server's side cut after cut bytes when cut > 0, or, stalled, held
// open and silent after them (signalled on p.stalled) until the client
// closes it.
func (p *Proxy) relayData(ln net.Listener, target string, cut int64, stall bool) {
	defer ln.Close()
	client, err := ln.Accept()
	if err != nil {
		return
	}
	defer client.Close()
	server, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer server.Close()
	clientDone := make(chan struct{})
	go func() {
		_, _ = io.Copy(server, client)
		close(clientDone)
	}()
	var from io.Reader = server
	if cut > 0 || stall {
		from = io.LimitReader(server, cut)
	}
	_, _ = io.Copy(client, from)
	if stall {
		select {
		case p.stalled <- struct{}{}:
		default:
		}
		<-clientDone
	}
}
