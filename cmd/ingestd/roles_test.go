package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/migrations"
	"github.com/ingestd/ingestd/migrations/pgtest"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// adminServer returns the test server's superuser URL, parsed, or skips the
// test as pgtest does when there is none to reach.
func adminServer(t *testing.T) (*url.URL, *pgx.Conn) {
	t.Helper()
	u, err := url.Parse(pgtest.ServerURL())
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Skipf("the roles test needs a postgres:// server URL, have %q", u.Redacted())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no PostgreSQL at %s: %v", u.Redacted(), err)
		}
		t.Skipf("no PostgreSQL at %s: %v", u.Redacted(), err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	var super bool
	if err := conn.QueryRow(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&super); err != nil || !super {
		t.Skipf("the roles test needs a superuser to play the administrator (%v)", err)
	}
	return u, conn
}

// as returns server's URL for user with password on database db.
func as(server *url.URL, user, password, db string) string {
	u := *server
	u.User = url.UserPassword(user, password)
	u.Path = "/" + db
	return u.String()
}

// runAdminScript runs one of deploy's psql scripts the way an administrator
// would: statement by statement (a statement ends with a line ending in ";"
// outside a $$ block), psql's :"var" and :'var' replaced by quoted
// identifiers and literals, and \connect switching to the named database as
// the same superuser.
func runAdminScript(t *testing.T, server *url.URL, conn *pgx.Conn, path string, vars map[string]string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var stmt strings.Builder
	inDollar := false
	for line := range strings.Lines(string(b)) {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		for k, v := range vars {
			line = strings.ReplaceAll(line, `:"`+k+`"`, pgx.Identifier{v}.Sanitize())
			line = strings.ReplaceAll(line, `:'`+k+`'`, "'"+strings.ReplaceAll(v, "'", "''")+"'")
		}
		if db, ok := strings.CutPrefix(strings.TrimSpace(line), `\connect `); ok && !inDollar {
			db = strings.Trim(db, `"`)
			u := *server
			u.Path = "/" + db
			conn, err = pgx.Connect(ctx, u.String())
			if err != nil {
				t.Fatalf("%s: \\connect %s: %v", path, db, err)
			}
			t.Cleanup(func() { conn.Close(context.Background()) })
			continue
		}
		stmt.WriteString(line)
		if strings.Count(line, "$$")%2 == 1 {
			inDollar = !inDollar
		}
		if inDollar || !strings.HasSuffix(strings.TrimSpace(line), ";") {
			continue
		}
		if _, err := conn.Exec(ctx, stmt.String()); err != nil {
			t.Fatalf("%s: %s: %v", path, stmt.String(), err)
		}
		stmt.Reset()
	}
	if strings.TrimSpace(stmt.String()) != "" {
		t.Fatalf("%s: unterminated statement %q", path, stmt.String())
	}
}

func randomName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// scratchInstall names what a test playing the administrator creates: a
// database (prefix and a random suffix), a role per roleSuffix (the
// database's name and the suffix) and a password for them. Whatever of them
// exists when t ends is dropped, the database first, then the roles in
// reverse order.
func scratchInstall(t *testing.T, admin *pgx.Conn, prefix string, roleSuffixes ...string) (db string, roles []string, password string) {
	t.Helper()
	db = randomName(prefix)
	for _, s := range roleSuffixes {
		roles = append(roles, db+s)
	}
	password = randomName("pw")
	t.Cleanup(func() {
		stmts := []string{"DROP DATABASE IF EXISTS " + pgx.Identifier{db}.Sanitize() + " WITH (FORCE)"}
		for _, r := range slices.Backward(roles) {
			stmts = append(stmts, "DROP ROLE IF EXISTS "+pgx.Identifier{r}.Sanitize())
		}
		for _, stmt := range stmts {
			if _, err := admin.Exec(context.Background(), stmt); err != nil {
				t.Errorf("cleanup: %s: %v", stmt, err)
			}
		}
	})
	return db, roles, password
}

// The documented least-privilege setup works end to end: an administrator
// runs deploy/roles.sql (database, PostGIS, owner role) and
// deploy/roles-login.sql (a login of its own for an instance); `ingestd
// migrate` then runs as the owner, which is no superuser, and polls run as
// the owner and as the login, creating their feeds' tables, which all belong
// to the owner.
func TestLeastPrivilegeRoles(t *testing.T) {
	t.Parallel()
	server, admin := adminServer(t)
	ctx := t.Context()
	db, roles, password := scratchInstall(t, admin, "ingestd_roles_", "_owner", "_host1")
	owner, login := roles[0], roles[1]
	vars := map[string]string{"db": db, "owner": owner, "login": login}
	runAdminScript(t, server, admin, "../../deploy/roles.sql", vars)
	runAdminScript(t, server, admin, "../../deploy/roles-login.sql", vars)
	for _, r := range []string{owner, login} {
		if _, err := admin.Exec(ctx, "ALTER ROLE "+pgx.Identifier{r}.Sanitize()+" PASSWORD "+
			"'"+password+"'"); err != nil {
			t.Fatal(err)
		}
	}
	ownerURL, loginURL := as(server, owner, password, db), as(server, login, password, db)

	code, stdout, stderr := runCLI(t, "migrate", "-database-url", ownerURL)
	if code != 0 || !strings.Contains(stdout, "migrations: applied") {
		t.Fatalf("migrate as %s: exit %d\nstdout: %s\nstderr: %s", owner, code, stdout, stderr)
	}

	// Neither role is privileged beyond the database's objects.
	for _, u := range []string{ownerURL, loginURL} {
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		var session, current string
		var super, createDB, createRole, dbOwner bool
		err = conn.QueryRow(ctx, `SELECT session_user, current_user, r.rolsuper, r.rolcreatedb, r.rolcreaterole,
				d.datdba = r.oid
			FROM pg_roles r, pg_database d WHERE r.rolname = session_user AND d.datname = current_database()`).
			Scan(&session, &current, &super, &createDB, &createRole, &dbOwner)
		conn.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if super || createDB || createRole || dbOwner {
			t.Errorf("%s: superuser %t, createdb %t, createrole %t, owns the database %t; want none",
				session, super, createDB, createRole, dbOwner)
		}
		if current != owner {
			t.Errorf("%s acts as %s, want %s", session, current, owner)
		}
	}

	cfg := writeTownConfig(t)
	// The login polls first, so it creates the jurisdiction's table too:
	// were that the login's, the owner could not add its feed's table to it.
	for _, p := range []struct{ role, url, feed, want string }{
		{login, loginURL, "town/zoning", "25 features (25 added"},
		{owner, ownerURL, "town/parcels", "12 features (12 added"},
		{login, loginURL, "town/zoning", "25 features (0 added"},
	} {
		code, stdout, stderr := runCLI(t, "poll", "-config", cfg, "-database-url", p.url, p.feed)
		if code != 0 || !strings.Contains(stdout, p.want) {
			t.Fatalf("poll %s as %s: exit %d\nstdout: %s\nstderr: %s", p.feed, p.role, code, stdout, stderr)
		}
	}
	if code, stdout, stderr := runCLI(t, "status", "-database-url", loginURL); code != 0 {
		t.Errorf("status as %s: exit %d\n%s%s", login, code, stdout, stderr)
	}

	// Every object ingestd made, the feeds' tables included, belongs to the
	// owner: a later migration (ALTER TABLE features recurses into every
	// partition) must be able to change them.
	assertOwnedBy(t, ownerURL, owner, 2)
	if code, stdout, stderr := runCLI(t, "migrate", "-database-url", ownerURL); code != 0 || !strings.Contains(stdout, "up to date") {
		t.Errorf("second migrate: exit %d\n%s%s", code, stdout, stderr)
	}
}

// assertOwnedBy checks that every relation and function of schemas public and ingestd
// that PostGIS did not create belongs to owner, and that at least
// feedTables partitions exist.
func assertOwnedBy(t *testing.T, dbURL, owner string, feedTables int) {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `
		SELECT c.relname || ' (' || pg_get_userbyid(c.relowner) || ')' FROM pg_class c
		WHERE c.relnamespace IN ('public'::regnamespace, 'ingestd'::regnamespace) AND pg_get_userbyid(c.relowner) <> $1
		  AND c.relkind IN ('r', 'p', 'S', 'v', 'm', 'f') -- indexes follow their tables
		  AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
		                  AND d.objid = c.oid AND d.deptype = 'e')
		UNION ALL
		SELECT p.oid::regprocedure::text || ' (' || pg_get_userbyid(p.proowner) || ')' FROM pg_proc p
		WHERE p.pronamespace IN ('public'::regnamespace, 'ingestd'::regnamespace) AND pg_get_userbyid(p.proowner) <> $1
		  AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass
		                  AND d.objid = p.oid AND d.deptype = 'e')`, owner)
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(foreign) > 0 {
		t.Errorf("objects not owned by %s: %v", owner, foreign)
	}
	var n int
	// The feeds' layer tables (one copy of each layer).
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM ingestd.feed_layers l JOIN pg_class c ON c.oid = to_regclass(l.layer)
		WHERE c.relkind = 'r' AND pg_get_userbyid(c.relowner) = $1`, owner).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n < feedTables {
		t.Errorf("%d feed tables owned by %s, want at least %d", n, owner, feedTables)
	}
}

// writeTownConfig serves two layers and writes a config that polls them as
// town/zoning (25 features) and town/parcels (12).
func writeTownConfig(t *testing.T) string {
	t.Helper()
	wfs := wfstest.New()
	wfs.AddLayer("zoning", layertest.Parcels{N: 25})
	wfs.AddLayer("parcels", layertest.Parcels{N: 12})
	ts := httptest.NewServer(wfs)
	t.Cleanup(ts.Close)
	cfg := filepath.Join(t.TempDir(), "j.yaml")
	yaml := fmt.Sprintf(`
jurisdictions:
  - id: town
    feeds:
      - {id: zoning, kind: wfs, url: %[1]s/wfs, type_name: zoning, page_size: 10, sort_by: pin}
      - {id: parcels, kind: wfs, url: %[1]s/wfs, type_name: parcels, page_size: 10, sort_by: pin}
`, ts.URL)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// An install migrated and polled as a superuser moves to the owner role with
// deploy/roles-existing.sql (run twice: it must be harmless), after which
// the owner polls, migrates and owns everything ingestd made.
func TestExistingInstallMovesToOwnerRole(t *testing.T) {
	t.Parallel()
	server, admin := adminServer(t)
	ctx := t.Context()
	db, roles, password := scratchInstall(t, admin, "ingestd_move_", "_owner")
	owner := roles[0]
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	superURL := *server
	superURL.Path = "/" + db
	cfg := writeTownConfig(t)
	for _, args := range [][]string{
		{"migrate", "-database-url", superURL.String()},
		{"poll", "-config", cfg, "-database-url", superURL.String(), "town/zoning"},
	} {
		if code, stdout, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("%s as the superuser: exit %d\n%s%s", args[0], code, stdout, stderr)
		}
	}

	vars := map[string]string{"db": db, "owner": owner}
	runAdminScript(t, server, admin, "../../deploy/roles-existing.sql", vars)
	runAdminScript(t, server, admin, "../../deploy/roles-existing.sql", vars)
	if _, err := admin.Exec(ctx, "ALTER ROLE "+pgx.Identifier{owner}.Sanitize()+" PASSWORD '"+password+"'"); err != nil {
		t.Fatal(err)
	}
	ownerURL := as(server, owner, password, db)
	for _, p := range []struct{ feed, want string }{
		{"town/zoning", "25 features (0 added"},
		{"town/parcels", "12 features (12 added"},
	} {
		code, stdout, stderr := runCLI(t, "poll", "-config", cfg, "-database-url", ownerURL, p.feed)
		if code != 0 || !strings.Contains(stdout, p.want) {
			t.Fatalf("poll %s as the owner: exit %d\nstdout: %s\nstderr: %s", p.feed, code, stdout, stderr)
		}
	}
	assertOwnedBy(t, ownerURL, owner, 2)
	if code, stdout, stderr := runCLI(t, "migrate", "-database-url", ownerURL); code != 0 || !strings.Contains(stdout, "up to date") {
		t.Errorf("migrate as the owner: exit %d\n%s%s", code, stdout, stderr)
	}
}

// A role that may not create PostGIS, migrating a database that lacks it,
// is told what the administrator must do.
func TestMigrateWithoutExtensionNamesTheFix(t *testing.T) {
	t.Parallel()
	server, admin := adminServer(t)
	ctx := t.Context()
	db, roles, password := scratchInstall(t, admin, "ingestd_noext_", "_owner")
	owner := roles[0]
	for _, stmt := range []string{
		"CREATE ROLE " + pgx.Identifier{owner}.Sanitize() + " LOGIN PASSWORD '" + password + "'",
		"CREATE DATABASE " + pgx.Identifier{db}.Sanitize(),
	} {
		if _, err := admin.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	u := *server
	u.Path = "/" + db
	dbAdmin, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dbAdmin.Exec(ctx, "GRANT CREATE ON SCHEMA public TO "+pgx.Identifier{owner}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	dbAdmin.Close(ctx)

	ownerURL := as(server, owner, password, db)
	code, _, stderr := runCLI(t, "migrate", "-database-url", ownerURL)
	if code != 1 {
		t.Fatalf("migrate without the extension: exit %d, want 1\n%s", code, stderr)
	}
	for _, want := range []string{"CREATE EXTENSION postgis as a superuser", `database "` + db + `"`, `role "` + owner + `"`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("migrate's error lacks %q:\n%s", want, stderr)
		}
	}

	connCfg, err := pgx.ParseConfig(ownerURL)
	if err != nil {
		t.Fatal(err)
	}
	sqlDB := stdlib.OpenDB(*connCfg)
	defer sqlDB.Close()
	if _, err := migrations.Up(ctx, sqlDB); !errors.Is(err, migrations.ErrExtensionMissing) {
		t.Errorf("migrations.Up: %v, want ErrExtensionMissing", err)
	}
}
