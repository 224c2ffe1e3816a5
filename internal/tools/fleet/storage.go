package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// What the run did to the database, relation by relation: which relations
// hold its size, which were read, how staging and the oldest open
// transaction moved over time, and which statements were running when the
// sampler looked. A run that reads far more blocks or leaves a far larger
// database than another says why by itself.

// stagingSample is one look at staging and the database, every
// stagingEvery.
type stagingSample struct {
	at                time.Duration // since the start
	stagingBytes      int64         // every jurisdiction's ingestd_staged, with indexes and TOAST
	live, dead        int64         // their tuples (pg_stat_user_tables)
	vacuums           int64         // of them, auto and manual
	oldestXact        time.Duration // the run's oldest open transaction (client backends)
	autovacuumWorkers int           // in the run's database at that moment
	dbBytes           int64
}

// stagingEvery spaces the staging samples: pg_database_size stats every
// file of a database of 20,000 relations.
const stagingEvery = 30 * time.Second

// sampleStaging appends a stagingSample.
func (s *sampler) sampleStaging(ctx context.Context, since time.Duration) error {
	var st stagingSample
	var oldest float64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(t.relid)), 0)::bigint,
			coalesce(sum(t.n_live_tup), 0)::bigint, coalesce(sum(t.n_dead_tup), 0)::bigint,
			coalesce(sum(t.autovacuum_count + t.vacuum_count), 0)::bigint,
			(SELECT coalesce(extract(epoch FROM max(clock_timestamp() - xact_start)), 0) FROM pg_stat_activity
				WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()),
			(SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'autovacuum worker'),
			pg_database_size(current_database())
		FROM pg_stat_user_tables t WHERE t.relname = 'ingestd_staged'`).Scan(
		&st.stagingBytes, &st.live, &st.dead, &st.vacuums, &oldest, &st.autovacuumWorkers, &st.dbBytes)
	if err != nil {
		return fmt.Errorf("staging sample: %w", err)
	}
	st.at = since
	st.oldestXact = time.Duration(oldest * float64(time.Second))
	s.staging = append(s.staging, st)
	return nil
}

// printStaging prints the staging samples, at most every minute.
func (s *sampler) printStaging() {
	if len(s.staging) == 0 {
		return
	}
	var parts []string
	last := -time.Hour
	peak, peakAt, oldest, workers := int64(0), time.Duration(0), time.Duration(0), 0
	for i, st := range s.staging {
		if st.stagingBytes > peak {
			peak, peakAt = st.stagingBytes, st.at
		}
		oldest = max(oldest, st.oldestXact)
		if st.autovacuumWorkers > 0 {
			workers++
		}
		if st.at-last < time.Minute && i != len(s.staging)-1 {
			continue
		}
		last = st.at
		parts = append(parts, fmt.Sprintf("%s %d MB (%d live, %d dead, %d vacuums; db %d MB; oldest xact %s)",
			st.at.Round(time.Second), st.stagingBytes>>20, st.live, st.dead, st.vacuums, st.dbBytes>>20, st.oldestXact.Round(time.Second)))
	}
	fmt.Printf("staging over time (every jurisdiction's ingestd_staged with indexes and TOAST, every %s, shown every minute): %s\n", stagingEvery, strings.Join(parts, "; "))
	fmt.Printf("staging peak %d MB at %s; the run's oldest open transaction at a sample %s; an autovacuum worker in the run's database at %d of %d samples\n",
		peak>>20, peakAt.Round(time.Second), oldest.Round(time.Second), workers, len(s.staging))
}

// relStat is one table's size and I/O at the end of the run.
type relStat struct {
	name                       string
	bytes                      int64 // with indexes and TOAST
	live, dead                 int64
	autovacuums, autoanalyzes  int64
	blksRead, blksHit          int64 // heap, indexes, TOAST and its index
	seqScans, seqRead, idxScan int64
}

func (r relStat) String() string {
	return fmt.Sprintf("%s %d MB (%d live, %d dead rows; %d autovacuums, %d autoanalyzes; read %d MB, hit %d MB; %d seq scans reading %d rows, %d index scans)",
		r.name, r.bytes>>20, r.live, r.dead, r.autovacuums, r.autoanalyzes, r.blksRead*8192>>20, r.blksHit*8192>>20, r.seqScans, r.seqRead, r.idxScan)
}

// relationIO prints the tables that hold the database's size and those
// whose blocks were read, the catalogs' included (DDL bloats them too),
// with the layer tables also summed as one.
func relationIO(ctx context.Context, pool *pgxpool.Pool) error {
	rows, err := pool.Query(ctx, `SELECT n.nspname, c.relname, pg_total_relation_size(c.oid),
			coalesce(s.n_live_tup, 0), coalesce(s.n_dead_tup, 0), coalesce(s.autovacuum_count, 0), coalesce(s.autoanalyze_count, 0),
			coalesce(io.heap_blks_read, 0) + coalesce(io.idx_blks_read, 0) + coalesce(io.toast_blks_read, 0) + coalesce(io.tidx_blks_read, 0),
			coalesce(io.heap_blks_hit, 0) + coalesce(io.idx_blks_hit, 0) + coalesce(io.toast_blks_hit, 0) + coalesce(io.tidx_blks_hit, 0),
			coalesce(s.seq_scan, 0), coalesce(s.seq_tup_read, 0), coalesce(s.idx_scan, 0)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid
		LEFT JOIN pg_statio_all_tables io ON io.relid = c.oid
		WHERE c.relkind IN ('r', 'm') AND n.nspname <> 'pg_toast' AND n.nspname NOT LIKE 'pg_temp%'`)
	if err != nil {
		return err
	}
	var all []relStat
	// A jurisdiction's schema holds its layers, its staging and its
	// history: each kind summed as one.
	groups := map[string]*relStat{"layer": {}, "ingestd_staged": {}, "ingestd_history": {}}
	counts := map[string]int{}
	for rows.Next() {
		var r relStat
		var nsp, rel string
		if err := rows.Scan(&nsp, &rel, &r.bytes, &r.live, &r.dead, &r.autovacuums, &r.autoanalyzes, &r.blksRead, &r.blksHit,
			&r.seqScans, &r.seqRead, &r.idxScan); err != nil {
			rows.Close()
			return err
		}
		r.name = nsp + "." + rel
		// In a jurisdiction's schema: a layer, its staging or its history.
		if !strings.HasPrefix(nsp, "pg_") && nsp != "ingestd" && nsp != "public" && nsp != "information_schema" {
			kind := "layer"
			if groups[rel] != nil {
				kind = rel
			}
			groups[kind].add(r)
			counts[kind]++
		}
		all = append(all, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	groups["layer"].name = fmt.Sprintf("all %d layer tables together", counts["layer"])
	groups["ingestd_staged"].name = fmt.Sprintf("all %d jurisdictions' staging tables together", counts["ingestd_staged"])
	groups["ingestd_history"].name = fmt.Sprintf("all %d jurisdictions' history tables together", counts["ingestd_history"])
	top := func(label string, less func(a, b relStat) bool) {
		sort.Slice(all, func(i, j int) bool { return less(all[i], all[j]) })
		fmt.Printf("%s:\n", label)
		for _, r := range all[:min(8, len(all))] {
			fmt.Printf("  %s\n", r)
		}
	}
	top("largest tables at the end (size with indexes and TOAST)", func(a, b relStat) bool { return a.bytes > b.bytes })
	top("tables by blocks read over the run (pg_statio: heap, indexes, TOAST)", func(a, b relStat) bool { return a.blksRead > b.blksRead })
	for _, kind := range []string{"layer", "ingestd_staged", "ingestd_history"} {
		fmt.Printf("  %s\n", groups[kind])
	}
	return nil
}

// add sums r's figures into g.
func (g *relStat) add(r relStat) {
	g.bytes += r.bytes
	g.live, g.dead = g.live+r.live, g.dead+r.dead
	g.autovacuums, g.autoanalyzes = g.autovacuums+r.autovacuums, g.autoanalyzes+r.autoanalyzes
	g.blksRead, g.blksHit = g.blksRead+r.blksRead, g.blksHit+r.blksHit
	g.seqScans, g.seqRead, g.idxScan = g.seqScans+r.seqScans, g.seqRead+r.seqRead, g.idxScan+r.idxScan
}

// activeStatements counts, per statement, the samples at which a client
// backend of the run was running it: where PostgreSQL's time went.
type activeStatements struct {
	count map[string]int
	text  map[string]string
	// waits counts, per statement, the sightings at which it waited and
	// on what (pg_stat_activity's wait_event_type:wait_event).
	waits map[string]map[string]int
}

// layerName matches a layer table's quoted name, schema and table, and
// numbers: what differs between two runs of one statement.
var (
	layerName = regexp.MustCompile(`"[^"]+"\."[^"]+"`)
	number    = regexp.MustCompile(`\b\d+\b`)
	spaces    = regexp.MustCompile(`\s+`)
)

// add counts one active statement, and what it waited on ("" when it
// did not).
func (a *activeStatements) add(query, wait string) {
	if a.count == nil {
		a.count, a.text, a.waits = map[string]int{}, map[string]string{}, map[string]map[string]int{}
	}
	q := spaces.ReplaceAllString(strings.TrimSpace(query), " ")
	q = number.ReplaceAllString(layerName.ReplaceAllString(q, `"j"."l"`), "N")
	sum := sha256.Sum256([]byte(q))
	id := hex.EncodeToString(sum[:4])
	a.count[id]++
	a.text[id] = q
	if wait != "" {
		if a.waits[id] == nil {
			a.waits[id] = map[string]int{}
		}
		a.waits[id][wait]++
	}
}

// waitText is what statement id waited on at its sightings, most often
// first: "waiting at 12 (Lock:relation 10, LWLock:BufferMapping 2)".
func (a *activeStatements) waitText(id string) string {
	w := a.waits[id]
	if len(w) == 0 {
		return "never waiting"
	}
	kinds := make([]string, 0, len(w))
	n := 0
	for k, c := range w {
		kinds = append(kinds, k)
		n += c
	}
	sort.Slice(kinds, func(i, j int) bool { return w[kinds[i]] > w[kinds[j]] })
	var parts []string
	for _, k := range kinds[:min(3, len(kinds))] {
		parts = append(parts, fmt.Sprintf("%s %d", k, w[k]))
	}
	return fmt.Sprintf("waiting at %d: %s", n, strings.Join(parts, ", "))
}

// print prints the statements seen running most often and writes their
// texts (as far as pg_stat_activity keeps them) to path.
func (a *activeStatements) print(path string, every time.Duration) error {
	ids := make([]string, 0, len(a.count))
	total := 0
	for id, n := range a.count {
		ids = append(ids, id)
		total += n
	}
	sort.Slice(ids, func(i, j int) bool { return a.count[ids[i]] > a.count[ids[j]] })
	ids = ids[:min(10, len(ids))]
	var parts []string
	var b strings.Builder
	for _, id := range ids {
		head := a.text[id]
		if len(head) > 60 {
			head = head[:60] + "…"
		}
		parts = append(parts, fmt.Sprintf("%s %d, %s (%s)", id, a.count[id], a.waitText(id), head))
		fmt.Fprintf(&b, "%s %d samples, %s\n%s\n\n", id, a.count[id], a.waitText(id), a.text[id])
	}
	fmt.Printf("statements running at the samples (every %s; %d sightings; the full texts in %s): %s\n", every, total, path, strings.Join(parts, "; "))
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
