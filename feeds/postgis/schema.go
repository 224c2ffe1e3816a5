package postgis

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd/schema"
)

// Typed layers. Staging profiles each page's values (schema.Profile, in
// staged_pages.profile); the apply's schema steps merge them with what
// the protocol declared into the snapshot's schema, compare it with the
// feed's stored one (feed_columns), hold the snapshot when it drifted and
// the feed says schema_change: hold, and otherwise record the columns and
// the changes and rebuild the feed's typed view when its columns or
// geometry type changed.

// schemaState is what the schema steps of one apply find.
type schemaState struct {
	// known: every staged page has a profile (pages staged before version
	// 20 have none; the schema is then left as it is).
	known        bool
	snap, stored schema.Schema
	storedExists bool
	viewExists   bool
	signature    string
	typedValues  map[string]schema.Type
	changes      []schema.Change
	// heldHere: the schema steps held the snapshot.
	heldHere bool
	// profile is the snapshot's value profile (feed_schemas.profile once
	// applied), storedProfile the applied snapshot's (nil: none kept).
	profile       schema.Profile
	storedProfile []byte
	// staged profiles the poll's staged pages alone: for a delta the
	// fetched features, which hold every row the apply writes.
	staged schema.Profile
}

// readSchema builds the snapshot's schema from the pages' profiles and the
// declared one, reads the stored one, and diffs them; under
// schema_change: hold a drift holds the snapshot (before anything is
// written), naming the columns. Its reads go in one round trip.
func (s *Store) readSchema(ctx context.Context, r *applyRun) error {
	st := &r.sch
	var profile schema.Profile
	st.known = true
	pages := 0
	var typed []byte
	b := &pgx.Batch{}
	b.Queue(sqlQuery("PollProfiles"), r.pollID).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			pages++
			var raw []byte
			if err := rows.Scan(&raw); err != nil {
				return err
			}
			if raw == nil {
				st.known = false
				continue
			}
			var p schema.Profile
			if err := json.Unmarshal(raw, &p); err != nil {
				return err
			}
			profile.Merge(&p)
		}
		return rows.Err()
	})
	b.Queue(sqlQuery("StoredSchema"), r.jurisdiction, r.feed).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			st.storedExists = true
			if err := rows.Scan(&st.stored.Features, &typed, &st.signature, &st.viewExists, &st.storedProfile); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	b.Queue(sqlQuery("StoredColumns"), r.jurisdiction, r.feed).Query(func(rows pgx.Rows) error {
		var err error
		st.stored.Columns, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (schema.Column, error) {
			var c schema.Column
			err := row.Scan(&c.Name, &c.Type, &c.Source, &c.NonNull, &c.Unconverted, &c.DeclaredType)
			return c, err
		})
		return err
	})
	if r.accept && r.declared == nil {
		queueHeldDeclared(b, r)
	}
	if err := r.tx.SendBatch(ctx, b).Close(); err != nil || !st.known {
		return err
	}
	if typed != nil {
		if err := json.Unmarshal(typed, &st.typedValues); err != nil {
			return err
		}
	}
	st.staged = profile
	if r.delta {
		// The pages hold only what changed: the rest of the snapshot's
		// profile is the applied one's.
		p, err := deltaProfile(ctx, r, st.storedProfile, &profile)
		if err != nil {
			return err
		}
		profile = p
	}
	st.profile = profile
	st.snap = schema.Build(&profile, r.declared, st.stored.Columns)
	if !st.storedExists {
		return nil
	}
	st.changes = schema.Diff(st.stored, st.snap)
	if len(st.changes) > 0 && r.schemaHold && !r.accept && r.held == nil {
		reason := schema.Describe(st.changes)
		r.held, st.heldHere = &reason, true
		// What the diff would have counted, for held_snapshots.
		r.pages, r.out.res.Features, r.out.previous = pages, int(profile.Features), int(r.table.lastCount)
	}
	return nil
}

// queueHeldDeclared queues the read of what was declared when the
// accepted snapshot was held.
func queueHeldDeclared(b *pgx.Batch, r *applyRun) {
	b.Queue(sqlQuery("HeldDeclared"), r.pollID).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var raw []byte
			if err := rows.Scan(&raw, &r.typedText); err != nil {
				return err
			}
			if raw != nil {
				if err := json.Unmarshal(raw, &r.declared); err != nil {
					return err
				}
			}
		}
		return rows.Err()
	})
}

// typedByDecoder is the map of the properties whose text values the
// decoder typed (declared numbers and booleans), nil when it typed none.
func typedByDecoder(r *applyRun) map[string]schema.Type {
	if !r.typedText || r.declared == nil {
		return nil
	}
	m := make(map[string]schema.Type)
	for _, c := range r.declared.Columns {
		if c.Type.Numberish() || c.Type == schema.Boolean {
			m[c.Name] = c.Type
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// recordSchema records the snapshot's schema: for a held snapshot its
// changes (action held) and what was declared, for an applied one its
// columns, its changes (evolved, or accepted) and the layer's numeric
// scales. Its writes go in one round
// trip, and rows that did not change are not written.
func (s *Store) recordSchema(ctx context.Context, r *applyRun) error {
	st := &r.sch
	if !st.known {
		return nil
	}
	action := "evolved"
	switch {
	case r.held != nil:
		action = "held"
	case r.accept:
		action = "accepted"
	}
	for _, c := range st.changes {
		s.logger.WarnContext(ctx, "schema changed", "poll_id", r.pollID, "jurisdiction", r.jurisdiction,
			"feed", r.feed, "column", c.Column, "change", c.What, "old_type", string(c.OldType),
			"new_type", string(c.NewType), "action", action)
	}
	b := &pgx.Batch{}
	if st.storedExists {
		b.Queue(sqlQuery("SupersedeSchemaChanges"), r.jurisdiction, r.feed, r.pollID)
	}
	queueSchemaChanges(b, r, action)
	if r.held != nil {
		declared, err := json.Marshal(r.declared)
		if err != nil {
			return err
		}
		b.Queue(sqlQuery("SaveHeldDeclared"), r.pollID, declared, r.typedText)
		return r.tx.SendBatch(ctx, b).Close()
	}
	if err := queueWriteSchema(b, r); err != nil {
		return err
	}
	// The layer table is the feed's features: written by the apply,
	// nothing to build from them.
	queueOneCopyScales(b, r)
	return r.tx.SendBatch(ctx, b).Close()
}

// queueSchemaChanges queues the run's changes for schema_changes.
func queueSchemaChanges(b *pgx.Batch, r *applyRun, action string) {
	n := len(r.sch.changes)
	if n == 0 {
		return
	}
	cols, what, oldT, newT := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	oldS, newS := make([]*float64, n), make([]*float64, n)
	for i, c := range r.sch.changes {
		cols[i], what[i], oldT[i], newT[i] = c.Column, c.What, string(c.OldType), string(c.NewType)
		if c.What == schema.NullCollapse {
			oldS[i], newS[i] = &c.OldShare, &c.NewShare
		}
	}
	b.Queue(sqlQuery("InsertSchemaChanges"), r.pollID, r.jurisdiction, r.feed, action,
		cols, what, oldT, newT, oldS, newS)
}

// maxViewAttributes is how many attributes a typed view has at most: a
// PostgreSQL relation (a view too) has at most 1,600 columns, and the view
// has 6 of its own. A wider layer's first attributes are columns;
// feed_columns lists them all, and properties holds every value.
const maxViewAttributes = 1600 - 6

// viewColumn is one column of the feed's schema signature (feed_schema),
// in the form the typed views of the partition layout took.
type viewColumn struct {
	Name   string      `json:"name"`
	Column string      `json:"column"`
	Type   schema.Type `json:"type"`
}

// queueWriteSchema queues the upsert of the snapshot's columns, the
// removal of the missing ones, and the feed's schema row with the
// signature of its columns and geometry type.
func queueWriteSchema(b *pgx.Batch, r *applyRun) error {
	st := &r.sch
	n := len(st.snap.Columns)
	names, types, sources, declared := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	nonNull, unconverted := make([]int64, n), make([]int64, n)
	for i, c := range st.snap.Columns {
		names[i], types[i], sources[i], declared[i] = c.Name, string(c.Type), string(c.Source), string(c.DeclaredType)
		nonNull[i], unconverted[i] = c.NonNull, c.Unconverted
	}
	viewCols := schema.ViewColumns(names)
	view := make([]viewColumn, 0, min(n, maxViewAttributes))
	for i, c := range st.snap.Columns[:min(n, maxViewAttributes)] {
		view = append(view, viewColumn{Name: c.Name, Column: viewCols[i], Type: c.Type})
	}
	b.Queue(sqlQuery("UpsertColumns"), r.jurisdiction, r.feed, r.pollID,
		names, viewCols, types, sources, nonNull, unconverted, declared)
	b.Queue(sqlQuery("RemoveColumns"), r.jurisdiction, r.feed, names)
	cols, err := json.Marshal(view)
	if err != nil {
		return err
	}
	sig := string(cols) + "|" + st.snap.Geometry
	typed := st.typedValues
	if want := typedByDecoder(r); want != nil {
		typed = want
	}
	var typedJSON []byte
	if typed != nil {
		if typedJSON, err = json.Marshal(typed); err != nil {
			return err
		}
	}
	declaredBy := ""
	if r.declared != nil {
		declaredBy = r.declared.Origin
	}
	profile, err := json.Marshal(&st.profile)
	if err != nil {
		return err
	}
	b.Queue(sqlQuery("UpsertFeedSchema"), r.jurisdiction, r.feed, st.snap.Geometry,
		st.snap.Features, declaredBy, typedJSON, sig, r.pollID, profile)
	return nil
}
