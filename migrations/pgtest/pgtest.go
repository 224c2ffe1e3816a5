// Package pgtest gives tests a fresh, migrated PostGIS database each.
//
// The server comes from INGESTD_TEST_DATABASE_URL, else DATABASE_URL, else the
// URL scripts/postgis.sh prints (port INGESTD_PG_PORT, default 55432). Each
// call to Pool or URL creates a database by copying a template that already
// holds the schema (CREATE DATABASE … TEMPLATE), which takes a fraction of the
// time of migrating, and drops it when the test ends. The template's name
// carries a hash of the migration files, so a schema change builds a new one.
//
// Before it makes a database, a test reserves the connections it will open
// on it (URLFor; URL and Pool reserve PoolConns) out of the server's
// max_connections, shared with every other test binary through the server
// (see budget.go), and waits while others hold them: the suite fits a stock
// server's 100 connections.
//
// When the server cannot be reached the test is skipped, except under CI=true,
// where it fails: CI must never pass by skipping the database tests.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/ingestd/ingestd/migrations"
)

// templateLockKey is the advisory lock (two-int form, so it never collides
// with ingestd's own bigint keys) that serialises template creation across
// test binaries: go test runs packages in parallel processes.
const (
	templateLockClass = 0x696e6765 // "inge"
	templateLockObj   = 1
)

// setupTimeout bounds connecting, building the template and creating a
// database; building waits behind other processes holding the lock.
const setupTimeout = 2 * time.Minute

// ServerURL returns the URL of the server tests use, as configured by the
// environment (see the package comment). It does not connect.
func ServerURL() string {
	if u := os.Getenv("INGESTD_TEST_DATABASE_URL"); u != "" {
		return u
	}
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u
	}
	port := os.Getenv("INGESTD_PG_PORT")
	if port == "" {
		port = "55432"
	}
	return "postgres://postgres@127.0.0.1:" + port + "/ingestd?sslmode=disable"
}

// URL creates a fresh migrated database for t and returns its URL, having
// reserved PoolConns connections for the test's use of it (see URLFor). The
// database is dropped when t ends (unless INGESTD_TEST_KEEP_DB=1, which keeps
// it for inspection and logs its name).
func URL(t testing.TB) string {
	t.Helper()
	return URLFor(t, PoolConns)
}

// URLFor creates a fresh migrated database for t, as URL does, once conns
// connections to the server are free for t: as many as the test, and the
// ingestd processes it starts, open at once on the database. It waits while
// other tests, in this test binary or another, hold the server's connections,
// and ends the test at once if the server has fewer than it needs. Size the
// pools opened on the URL with PoolURL.
func URLFor(t testing.TB, conns int) string {
	t.Helper()
	server := ServerURL()
	admin := reserveFor(t, server, conns)
	name := "ingestd_test_" + randomHex(8)
	t.Cleanup(func() { dropDatabase(t, admin, server, name) })

	// The setup's time starts once the test has its connections: the wait
	// for them is in line, not setup.
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	tpl, err := ensureTemplate(ctx, admin, server)
	if err != nil {
		t.Fatalf("pgtest: template: %v", err)
	}
	strategy, err := copyStrategy(ctx, admin)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+
		" TEMPLATE "+pgx.Identifier{tpl}.Sanitize()+strategy); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	// A copy does not inherit its template's settings: ingestd's tables
	// are found through search_path (migration 31).
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" SET search_path = ingestd, public"); err != nil {
		t.Fatalf("pgtest: search_path of %s: %v", name, err)
	}
	return withDatabase(server, name)
}

// reserveFor connects to server and takes conns slots of its budget, and one
// for the connection itself, which holds them until the test ends (see
// dropDatabase). It waits while other tests hold them, and ends t when it
// cannot have them.
func reserveFor(t testing.TB, server string, conns int) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	admin, err := connect(ctx, server)
	if err != nil {
		unreachable(t, server, err)
	}
	b, err := serverBudget(ctx, admin)
	if err == nil {
		err = reserve(t.Context(), admin, b, server, conns+1)
	}
	if err != nil {
		admin.Close(context.WithoutCancel(ctx))
		t.Fatalf("pgtest: %v", err)
	}
	return admin
}

// Pool returns a pool of PoolConns connections on a fresh migrated database
// for t; the pool is closed and the database dropped when t ends.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	u := URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	pool, err := pgxpool.New(ctx, PoolURL(u, PoolConns))
	if err != nil {
		t.Fatalf("pgtest: pool: %v", err)
	}
	// Registered after URL's cleanup, so it runs first: the pool must be
	// closed before its database can be dropped.
	t.Cleanup(pool.Close)
	return pool
}

func connect(ctx context.Context, server string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(server)
	if err != nil {
		return nil, err
	}
	if cfg.ConnectTimeout == 0 || cfg.ConnectTimeout > 10*time.Second {
		cfg.ConnectTimeout = 10 * time.Second
	}
	return pgx.ConnectConfig(ctx, cfg)
}

func unreachable(t testing.TB, server string, err error) {
	t.Helper()
	msg := fmt.Sprintf("pgtest: no PostGIS at %s: %v\n"+
		"start one with `export DATABASE_URL=$(scripts/postgis.sh)` from the repo root", redact(server), err)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// copyStrategy is the STRATEGY clause CREATE DATABASE copies the template
// with: FILE_COPY on a server that does not fsync (scripts/postgis.sh's),
// else the server's default. PostgreSQL 15's default, WAL_LOG, writes the
// template through shared buffers and the WAL; FILE_COPY copies its
// files and checkpoints, which costs little without fsync. With dozens of
// databases made at once, feeds/postgis took about a third less time.
func copyStrategy(ctx context.Context, admin *pgx.Conn) (string, error) {
	var fileCopy bool
	err := admin.QueryRow(ctx, `SELECT current_setting('server_version_num')::int >= 150000
		AND NOT current_setting('fsync')::bool`).Scan(&fileCopy)
	if err != nil {
		return "", fmt.Errorf("server settings: %w", err)
	}
	if fileCopy {
		return " STRATEGY FILE_COPY", nil
	}
	return "", nil
}

// ensureTemplate returns the name of the template database for the current
// migrations, building it first if no process has.
func ensureTemplate(ctx context.Context, admin *pgx.Conn, server string) (string, error) {
	hash, err := migrations.Hash()
	if err != nil {
		return "", err
	}
	tpl := "ingestd_tpl_" + hash[:16]

	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock($1, $2)", templateLockClass, templateLockObj); err != nil {
		return "", fmt.Errorf("lock: %w", err)
	}
	defer func() {
		_, _ = admin.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1, $2)", templateLockClass, templateLockObj)
	}()

	// datistemplate is set only once migrations succeeded, so it doubles as
	// the "complete" marker: a database of that name without it is the
	// leftover of a process that died while building.
	var isTemplate bool
	err = admin.QueryRow(ctx, "SELECT datistemplate FROM pg_database WHERE datname = $1", tpl).Scan(&isTemplate)
	switch {
	case err == nil && isTemplate:
		return tpl, nil
	case err == nil:
		if _, err := admin.Exec(ctx, "DROP DATABASE "+pgx.Identifier{tpl}.Sanitize()+" WITH (FORCE)"); err != nil {
			return "", fmt.Errorf("drop incomplete %s: %w", tpl, err)
		}
	case !errors.Is(err, pgx.ErrNoRows):
		return "", fmt.Errorf("look up %s: %w", tpl, err)
	}

	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{tpl}.Sanitize()); err != nil {
		return "", fmt.Errorf("create %s: %w", tpl, err)
	}
	if err := migrate(ctx, withDatabase(server, tpl)); err != nil {
		return "", fmt.Errorf("migrate %s: %w", tpl, err)
	}
	// No connections to the template from now on: CREATE DATABASE refuses to
	// copy a database someone is connected to.
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{tpl}.Sanitize()+
		" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false"); err != nil {
		return "", fmt.Errorf("mark %s as template: %w", tpl, err)
	}
	return tpl, nil
}

func migrate(ctx context.Context, u string) error {
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		return err
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	_, err = migrations.Up(ctx, db)
	return err
}

// dropDatabase drops the test's database on admin, the connection that
// made it, then frees the test's slots and closes admin. DROP DATABASE
// waits for a checkpoint, which on a busy shared server can take longer than
// any one test's statements, hence the generous bound.
func dropDatabase(t testing.TB, admin *pgx.Conn, server, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	defer admin.Close(ctx)
	if os.Getenv("INGESTD_TEST_KEEP_DB") == "1" {
		t.Logf("pgtest: kept database %s", name)
	} else if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		// FORCE: a test that leaked a connection must not leave its database.
		t.Errorf("pgtest: drop %s on %s: %v", name, redact(server), err)
	}
	if err := release(ctx, admin); err != nil {
		t.Errorf("pgtest: freeing the test's connections: %v", err)
	}
}

// withDatabase returns server with its database replaced by name. It accepts
// both URLs and keyword/value connection strings.
func withDatabase(server, name string) string {
	if strings.HasPrefix(server, "postgres://") || strings.HasPrefix(server, "postgresql://") {
		u, err := url.Parse(server)
		if err == nil {
			u.Path = "/" + name
			return u.String()
		}
	}
	// In a keyword/value string the last dbname wins.
	return server + " dbname=" + name
}

// keywordPassword finds the password in a keyword/value connection string.
var keywordPassword = regexp.MustCompile(`password=('(?:[^'\\]|\\.)*'|\S*)`)

// redact hides a password in a URL or keyword/value string before it reaches
// a test log.
func redact(server string) string {
	u, err := url.Parse(server)
	if err != nil || u.User == nil {
		return keywordPassword.ReplaceAllString(server, "password=xxxxx")
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}
