// Package migrations holds ingestd's database schema as versioned SQL files
// (NNNNN_name.sql, goose format, each with an Up and a Down section) embedded
// in the binary, and applies them with goose.
//
// Each version runs in its own transaction together with its row in the
// version table, so a failed migration leaves the database at the previous
// version. Concurrent Up calls (several instances starting at once) are
// serialised by a Postgres advisory lock.
package migrations

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// FS holds the migration files.
//
//go:embed *.sql
var FS embed.FS

// VersionTable is the table in which goose records the applied versions,
// in schema ingestd with everything else of ingestd's. Qualified: goose
// looks an unqualified name up in current_schema() only. A database
// migrated by an older ingestd, or below SchemaVersion, has it in public
// (legacyVersionTable); Up and DownTo move it before goose reads it.
const VersionTable = Schema + ".goose_db_version"

// Schema is the schema of ingestd's own tables, views and functions
// (migration 31), and of goose's version table.
const Schema = "ingestd"

// SchemaVersion is the migration that makes Schema; goose's table is in
// public before it.
const SchemaVersion = 31

// legacyVersionTable is goose's table where a database has it below
// SchemaVersion, or as an ingestd that did not place it left it.
const legacyVersionTable = "public.goose_db_version"

// State tells where a database stands against the embedded migrations.
type State struct {
	// Current is the highest applied version, 0 when none is.
	Current int64
	// Latest is the highest embedded version.
	Latest int64
	// Pending lists the embedded versions not applied, in order.
	Pending []int64
}

// UpToDate reports whether every embedded migration has been applied.
func (s State) UpToDate() bool { return len(s.Pending) == 0 }

// Option configures Up.
type Option func(*options)

type options struct {
	logger *slog.Logger
}

// WithLogger makes Up log each applied version to logger; nil discards.
func WithLogger(logger *slog.Logger) Option {
	return func(o *options) {
		if logger != nil {
			o.logger = logger
		}
	}
}

// Up applies every pending migration to db, each in its own transaction, and
// returns the versions it applied. db must use the pgx driver (for a pool,
// stdlib.OpenDBFromPool).
func Up(ctx context.Context, db *sql.DB, opts ...Option) ([]int64, error) {
	return up(ctx, db, -1, opts...)
}

// up applies the pending migrations up to version (-1: all), as Up.
func up(ctx context.Context, db *sql.DB, version int64, opts ...Option) ([]int64, error) {
	o := options{logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	var applied []int64
	err := withVersionLock(ctx, db, func(conn *sql.Conn) error {
		table, err := placeVersionTable(ctx, conn)
		if err != nil {
			return err
		}
		if table == legacyVersionTable {
			// Schema ingestd does not exist yet (a new database, or one
			// before version 31): goose keeps its table in public up to the
			// version that makes the schema, which then takes it along.
			done, err := upTo(ctx, db, legacyVersionTable, o.logger, bound(SchemaVersion, version))
			applied = append(applied, done...)
			if err != nil {
				return err
			}
			if _, err := placeVersionTable(ctx, conn); err != nil {
				return err
			}
		}
		if version >= 0 && version <= SchemaVersion {
			return nil
		}
		done, err := upTo(ctx, db, VersionTable, o.logger, version)
		applied = append(applied, done...)
		return err
	})
	return applied, err
}

// bound is the lower of two versions, -1 meaning none.
func bound(v, limit int64) int64 {
	if limit < 0 {
		return v
	}
	return min(v, limit)
}

// upTo applies the pending migrations up to version (-1: all) with goose
// keeping its versions in table.
func upTo(ctx context.Context, db *sql.DB, table string, logger *slog.Logger, version int64) ([]int64, error) {
	// A session advisory lock: several instances starting together must not
	// race to apply the same version.
	locker, err := newUnshardedLocker()
	if err != nil {
		return nil, err
	}
	p, err := newProvider(db, table, goose.WithSessionLocker(locker), goose.WithSlog(logger))
	if err != nil {
		return nil, err
	}
	var results []*goose.MigrationResult
	if version < 0 {
		results, err = p.Up(ctx)
	} else {
		results, err = p.UpTo(ctx, version)
	}
	applied := make([]int64, 0, len(results))
	for _, r := range results {
		if r.Error == nil {
			applied = append(applied, r.Source.Version)
		}
	}
	if err != nil {
		return applied, fmt.Errorf("migrations: up: %w", explain(ctx, db, err))
	}
	return applied, nil
}

// ErrExtensionMissing is wrapped by Up's error when the postgis extension is
// not in the database and the migrating role may not create it (only a
// superuser may): the administrator creates it once, and ingestd migrates and
// runs without superuser rights after that (deploy/roles.sql).
var ErrExtensionMissing = errors.New("the postgis extension is not installed in this database")

// explain turns the PostgreSQL errors that mean "an administrator must act"
// into messages that say what to do; other errors pass unchanged.
func explain(ctx context.Context, db *sql.DB, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || !strings.Contains(pgErr.Message, "extension") {
		return err
	}
	var role, database string
	if qerr := db.QueryRowContext(context.WithoutCancel(ctx),
		`SELECT current_user, current_database()`).Scan(&role, &database); qerr != nil {
		role, database = "?", "?"
	}
	switch pgErr.Code {
	case "42501": // insufficient_privilege: CREATE EXTENSION by a non-superuser
		return fmt.Errorf("%w and role %q may not create it: an administrator must run "+
			"CREATE EXTENSION postgis as a superuser in database %q once (see deploy/roles.sql), "+
			"then migrate again: %w", ErrExtensionMissing, role, database, err)
	case "58P01": // undefined_file: no postgis.control on the server
		return fmt.Errorf("%w and the server has no PostGIS to install: an administrator must "+
			"install the PostGIS package on the database server, then run CREATE EXTENSION postgis "+
			"as a superuser in database %q: %w", ErrExtensionMissing, database, err)
	}
	return err
}

// DownTo rolls db back to version (0 undoes every migration), one version
// per transaction, newest first. It is for development and tests; production
// schemas only move forward.
func DownTo(ctx context.Context, db *sql.DB, version int64) error {
	return withVersionLock(ctx, db, func(conn *sql.Conn) error {
		table, err := placeVersionTable(ctx, conn)
		if err != nil {
			return err
		}
		if table == VersionTable {
			if err := downTo(ctx, db, VersionTable, max(version, SchemaVersion-1)); err != nil || version >= SchemaVersion {
				return err
			}
			// Version 31 undone, schema ingestd holds goose's table alone:
			// both go, as before the schema existed, so that the older
			// versions' Downs find their objects in public.
			if _, err := conn.ExecContext(ctx, `ALTER TABLE `+VersionTable+` SET SCHEMA public; DROP SCHEMA `+Schema); err != nil {
				return fmt.Errorf("migrations: down to %d: moving goose's version table back to public: %w", version, err)
			}
		}
		return downTo(ctx, db, legacyVersionTable, version)
	})
}

// downTo rolls db back to version with goose keeping its versions in table.
func downTo(ctx context.Context, db *sql.DB, table string, version int64) error {
	locker, err := newUnshardedLocker()
	if err != nil {
		return err
	}
	p, err := newProvider(db, table, goose.WithSessionLocker(locker), goose.WithSlog(slog.New(slog.DiscardHandler)))
	if err != nil {
		return err
	}
	if _, err := p.DownTo(ctx, version); err != nil {
		return fmt.Errorf("migrations: down to %d: %w", version, err)
	}
	return nil
}

// shardingSetting is Citus's switch for schema-based sharding. While it is
// on, every CREATE SCHEMA makes a distributed schema, placed whole on one
// worker — CREATE SCHEMA IF NOT EXISTS of a schema that exists too. The
// schemas the migrations make (ingestd, whose tables the other schemas'
// rows point to, and common) are to stay plain schemas on the coordinator
// (decision 0219); the jurisdictions' schemas that ingestd makes as it
// runs follow the server's setting.
const shardingSetting = "citus.enable_schema_based_sharding"

// unshardedLocker is goose's session lock, which also turns schema-based
// sharding off on the connection it locks (goose applies every version on
// that connection) and puts the setting back when it unlocks, before the
// connection returns to the pool. Where the setting does not exist (no
// Citus) it changes nothing.
type unshardedLocker struct {
	lock.SessionLocker
	restore sql.NullString // the setting before SessionLock, when it was changed
}

func newUnshardedLocker() (*unshardedLocker, error) {
	l, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return &unshardedLocker{SessionLocker: l}, nil
}

// SessionLock takes goose's lock, then turns sharding off for the session.
func (l *unshardedLocker) SessionLock(ctx context.Context, conn *sql.Conn) error {
	if err := l.SessionLocker.SessionLock(ctx, conn); err != nil {
		return err
	}
	var was sql.NullString
	err := conn.QueryRowContext(ctx, `SELECT current_setting($1, true)`, shardingSetting).Scan(&was)
	if err == nil && was.Valid && was.String != "off" {
		if _, err = conn.ExecContext(ctx, `SELECT set_config($1, 'off', false)`, shardingSetting); err == nil {
			l.restore = was
		}
	}
	if err != nil {
		err = fmt.Errorf("migrations: turning Citus's %s off for the migrations: %w", shardingSetting, err)
		return errors.Join(err, l.SessionLocker.SessionUnlock(context.WithoutCancel(ctx), conn))
	}
	return nil
}

// SessionUnlock puts the setting back, then releases goose's lock.
func (l *unshardedLocker) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	var err error
	if l.restore.Valid {
		if _, err = conn.ExecContext(ctx, `SELECT set_config($1, $2, false)`, shardingSetting, l.restore.String); err != nil {
			err = fmt.Errorf("migrations: restoring Citus's %s: %w", shardingSetting, err)
		}
		l.restore = sql.NullString{}
	}
	return errors.Join(err, l.SessionLocker.SessionUnlock(ctx, conn))
}

// versionLockID keys the advisory lock Up and DownTo hold while they move
// goose's table and run goose; goose takes its own (lock.DefaultLockID)
// inside, on another connection, so this one must differ.
const versionLockID int64 = 0x696e676573746400 // "ingestd\0"

// withVersionLock runs fn holding versionLockID on a connection of db's,
// so that instances starting together decide where goose's table is, move
// it and migrate one after the other.
func withVersionLock(ctx context.Context, db *sql.DB, fn func(*sql.Conn) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	defer func() { _ = conn.Close() }()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, versionLockID); err != nil {
		return fmt.Errorf("migrations: taking the migration lock: %w", err)
	}
	defer func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, versionLockID)
	}()
	return fn(conn)
}

// Status reports which embedded migrations db has applied. It takes no lock
// and creates nothing, so a readiness probe can call it while another
// instance migrates; a database without the version table has applied none.
func Status(ctx context.Context, db *sql.DB) (State, error) {
	p, err := newProvider(db, VersionTable)
	if err != nil {
		return State{}, err
	}
	var st State
	sources := p.ListSources()
	if len(sources) > 0 {
		st.Latest = sources[len(sources)-1].Version
	}
	applied, err := appliedVersions(ctx, db)
	if err != nil {
		return State{}, err
	}
	for _, s := range sources {
		if _, ok := applied[s.Version]; !ok {
			st.Pending = append(st.Pending, s.Version)
		}
	}
	for v := range applied {
		st.Current = max(st.Current, v)
	}
	return st, nil
}

// Pending reports whether db lacks any embedded migration.
func Pending(ctx context.Context, db *sql.DB) (bool, error) {
	st, err := Status(ctx, db)
	if err != nil {
		return false, err
	}
	return !st.UpToDate(), nil
}

// Versions returns the embedded migration versions in order.
func Versions() ([]int64, error) {
	p, err := newProvider(nil, VersionTable)
	if err != nil {
		return nil, err
	}
	var vs []int64
	for _, s := range p.ListSources() {
		vs = append(vs, s.Version)
	}
	return vs, nil
}

// Hash returns a hex digest of the embedded migration files, names and
// contents: it changes whenever the schema does, so test helpers can key
// template databases on it.
func Hash() (string, error) {
	names, err := fs.Glob(FS, "*.sql")
	if err != nil {
		return "", fmt.Errorf("migrations: %w", err)
	}
	slices.Sort(names)
	h := sha256.New()
	for _, n := range names {
		b, err := FS.ReadFile(n)
		if err != nil {
			return "", fmt.Errorf("migrations: %w", err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func newProvider(db *sql.DB, table string, opts ...goose.ProviderOption) (*goose.Provider, error) {
	// No global registry: ingestd has no Go migrations, and goose's global
	// registry is package state we do not want to depend on.
	opts = append(opts, goose.WithDisableGlobalRegistry(true), goose.WithTableName(table))
	if db == nil {
		// goose insists on a *sql.DB even to list sources; an unopened
		// handle is enough for that and is never used to connect.
		db = sql.OpenDB(nilConnector{})
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, FS, opts...)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return p, nil
}

// nilConnector lets goose build a provider that only lists sources; it
// refuses to connect.
type nilConnector struct{}

func (nilConnector) Connect(context.Context) (driver.Conn, error) {
	return nil, errors.New("migrations: no database")
}

func (nilConnector) Driver() driver.Driver { return nilDriver{} }

type nilDriver struct{}

func (nilDriver) Open(string) (driver.Conn, error) { return nil, errors.New("migrations: no database") }

// placeVersionTable moves goose's table from public (legacyVersionTable)
// into schema ingestd once that schema exists
// (version 31 makes it), and returns where the table is to be: VersionTable,
// or legacyVersionTable while the schema does not exist. goose reads only
// the table it is given and would otherwise make an empty one and apply
// every version again. ALTER TABLE … SET SCHEMA keeps the rows and takes
// the identity sequence along.
func placeVersionTable(ctx context.Context, conn *sql.Conn) (string, error) {
	var table string
	err := conn.QueryRowContext(ctx, `SELECT CASE WHEN to_regnamespace($1) IS NULL THEN $3 ELSE $2 END`,
		Schema, VersionTable, legacyVersionTable).Scan(&table)
	if err == nil && table == VersionTable {
		_, err = conn.ExecContext(ctx, `DO $$ BEGIN
		   IF to_regclass('`+legacyVersionTable+`') IS NOT NULL AND to_regclass('`+VersionTable+`') IS NULL THEN
		     ALTER TABLE `+legacyVersionTable+` SET SCHEMA `+Schema+`;
		   END IF;
		 END $$`)
	}
	if err != nil {
		return "", fmt.Errorf("migrations: moving goose's version table to schema %s: %w", Schema, err)
	}
	return table, nil
}

// appliedVersions reads the version table directly rather than through goose:
// goose's status takes the migration lock (so it would wait for a running
// migration) and fails when the table does not exist yet. A database no
// Up has moved yet is read where its table is, in public.
func appliedVersions(ctx context.Context, db *sql.DB) (map[int64]struct{}, error) {
	var rows *sql.Rows
	// Twice at most: an Up of another instance may move the table from
	// public into ingestd between the look-up and the read.
	for try := 0; ; try++ {
		var table sql.NullString
		if err := db.QueryRowContext(ctx, `SELECT CASE WHEN to_regclass($1) IS NOT NULL THEN $1 WHEN to_regclass($2) IS NOT NULL THEN $2 END`,
			VersionTable, legacyVersionTable).Scan(&table); err != nil {
			return nil, fmt.Errorf("migrations: read versions: %w", err)
		}
		if !table.Valid {
			return map[int64]struct{}{}, nil
		}
		var err error
		rows, err = db.QueryContext(ctx,
			// The newest row of each version decides: older goose versions
			// recorded a rollback as a new row with is_applied = false.
			`SELECT version_id FROM (
			   SELECT DISTINCT ON (version_id) version_id, is_applied
			   FROM `+pgx.Identifier(strings.Split(table.String, ".")).Sanitize()+` ORDER BY version_id, id DESC) v
			 WHERE is_applied AND version_id > 0`)
		var pgErr *pgconn.PgError
		if err != nil && try == 0 && errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("migrations: read versions: %w", err)
		}
		break
	}
	defer rows.Close()
	applied := make(map[int64]struct{})
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("migrations: read versions: %w", err)
		}
		applied[v] = struct{}{}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("migrations: read versions: %w", err)
	}
	return applied, nil
}
