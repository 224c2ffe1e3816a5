// Package namedsql reads files of named SQL statements, River's dbsqlc
// layout: each statement starts at a line
//
//	-- name: NAME
//
// and runs to the next such line. Comment lines are dropped (they say why
// to the reader; the database need not read them), as is a trailing
// semicolon. breaker, deadletter and feeds/postgis keep their SQL this way
// (feeds/postgis composes statements from shared blocks on top: {{Name}}).
package namedsql

import (
	"fmt"
	"io/fs"
	"strings"
)

// Statements are the statements of one file by name.
type Statements map[string]string

// Get returns the statement called name. The names are fixed in the source
// of the package that embeds the file, so a name the file lacks is a bug:
// it panics.
func (s Statements) Get(name string) string {
	q, ok := s[name]
	if !ok {
		panic(fmt.Sprintf("namedsql: no SQL statement %q", name))
	}
	return q
}

// MustLoad is Load for a file embedded in the binary: a missing or
// malformed one is a bug of the package that embeds it, so it panics, and
// every test that loads the file fails.
func MustLoad(fsys fs.FS, file string) Statements {
	s, err := Load(fsys, file)
	if err != nil {
		panic("namedsql: " + err.Error())
	}
	return s
}

// Load parses file of fsys into its statements by name. A file that cannot
// be read, holds SQL before its first name, or names a statement twice is
// an error.
func Load(fsys fs.FS, file string) (Statements, error) {
	text, err := fs.ReadFile(fsys, file)
	if err != nil {
		return nil, err
	}
	out := Statements{}
	name := ""
	var body strings.Builder
	flush := func() error {
		if name == "" {
			if strings.TrimSpace(body.String()) != "" {
				return fmt.Errorf("%s: SQL before the first -- name: line", file)
			}
			return nil
		}
		if _, dup := out[name]; dup {
			return fmt.Errorf("%s: statement %q twice", file, name)
		}
		out[name] = strings.TrimSuffix(strings.TrimSpace(body.String()), ";")
		return nil
	}
	for line := range strings.Lines(string(text)) {
		if n, ok := strings.CutPrefix(line, "-- name: "); ok {
			if err := flush(); err != nil {
				return nil, err
			}
			name = strings.TrimSpace(n)
			body.Reset()
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		body.WriteString(line)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}
