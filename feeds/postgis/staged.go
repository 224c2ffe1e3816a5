package postgis

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// stagedTableName is the table of a jurisdiction's schema its polls stage
// into (migration 47, docs/decisions/0226): beside its layers and history,
// so that an apply reads and writes one schema, which Citus places on one
// node. config reserves layer names that begin with "ingestd_".
const stagedTableName = "ingestd_staged"

// stagedTable is the staging table of schemaName, quoted.
func stagedTable(schemaName string) string {
	return pgx.Identifier{schemaName, stagedTableName}.Sanitize()
}

// stagedTx is a transaction (or a savepoint of one) on behalf of poll
// pollID: its statements name the poll's staging table {{staged}}
// (sql/staging.sql and the statements that read staging), and stagedTx
// fills it in, so that every statement of the poll's apply reads the one
// table its pages went to.
type stagedTx struct {
	pgx.Tx
	pollID int64
	table  string
}

func (t stagedTx) fill(sql string) string {
	if strings.Contains(sql, "{{staged}}") {
		return strings.ReplaceAll(sql, "{{staged}}", t.table)
	}
	return sql
}

// Exec runs sql with {{staged}} filled in.
func (t stagedTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.Tx.Exec(ctx, t.fill(sql), args...)
}

// Query runs sql with {{staged}} filled in.
func (t stagedTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.Tx.Query(ctx, t.fill(sql), args...)
}

// QueryRow runs sql with {{staged}} filled in.
func (t stagedTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.Tx.QueryRow(ctx, t.fill(sql), args...)
}

// Begin starts a savepoint whose statements name the same table.
func (t stagedTx) Begin(ctx context.Context) (pgx.Tx, error) {
	sp, err := t.Tx.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return stagedTx{Tx: sp, pollID: t.pollID, table: t.table}, nil
}

// withStaging returns tx naming poll pollID's staging table (stagedTx),
// tx itself when it already does. A jurisdiction without the table yet
// (a poll begun before version 47 whose jurisdiction had nothing staged)
// gets it.
func withStaging(ctx context.Context, tx pgx.Tx, pollID int64) (pgx.Tx, error) {
	if st, ok := tx.(stagedTx); ok {
		if st.pollID == pollID {
			return tx, nil
		}
		tx = st.Tx
	}
	var schemaName string
	var exists bool
	err := tx.QueryRow(ctx, sqlQuery("PollStaging"), pollID).Scan(&schemaName, &exists)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: no poll %d", ErrPollNotRunning, pollID)
	}
	if err != nil {
		return nil, err
	}
	return stagingOf(ctx, tx, pollID, schemaName, exists)
}

// stagingOf is tx naming the staging table of schemaName for poll pollID,
// made first unless exists.
func stagingOf(ctx context.Context, tx pgx.Tx, pollID int64, schemaName string, exists bool) (pgx.Tx, error) {
	if !exists {
		if err := ensureJurisdictionTables(ctx, tx, schemaName); err != nil {
			return nil, err
		}
	}
	return stagedTx{Tx: tx, pollID: pollID, table: stagedTable(schemaName)}, nil
}

// beginner is what ensureJurisdictionTables opens its savepoint or
// transaction on: a transaction or the pool.
type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// ensureJurisdictionTables creates the jurisdiction's schema with its
// staging and history tables (OneCopyCreateSchema) in a savepoint of db,
// or a transaction of its own on the pool. Two first polls or loads of
// one jurisdiction race on them: the second waits for the first to
// commit and meets a duplicate key, and finds them made.
func ensureJurisdictionTables(ctx context.Context, db beginner, schemaName string) error {
	sp, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	ddl := strings.NewReplacer("{{schema}}", pgx.Identifier{schemaName}.Sanitize(),
		"{{staged}}", stagedTable(schemaName), "{{history}}", historyTable(schemaName)).Replace(sqlQuery("OneCopyCreateSchema"))
	// One statement a call: a connection that prepares its statements
	// (extended protocol) refuses several in one, and Citus distributes
	// each as its own top-level statement either way.
	for _, stmt := range strings.Split(ddl, ";\n") {
		if _, err = sp.Exec(ctx, stmt); err != nil {
			break
		}
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return sp.Rollback(ctx)
	}
	if err != nil {
		_ = sp.Rollback(ctx)
	}
	if errors.As(err, &pgErr) && pgErr.Code == "42501" {
		return fmt.Errorf("role may not create schema %s for its jurisdiction's layers, staging and history: an administrator must grant CREATE on the database (deploy/roles.sql)",
			schemaName)
	}
	if err != nil {
		return err
	}
	return sp.Commit(ctx)
}
