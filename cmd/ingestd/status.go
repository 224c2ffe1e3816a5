package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/redact"
)

// cmdStatus prints what an operator asks first: how many feeds are in each
// state, the feeds that are not fresh and why, and every origin's breaker.
// It reads the database, so it sees the whole cluster, not one process.
func cmdStatus(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() != 0 {
		return usageError{"status takes no arguments"}
	}
	logger, err := c.logger(stderr)
	if err != nil {
		return err
	}
	ctx, pool, done, err := c.connect()
	if err != nil {
		return err
	}
	defer done()

	if err := feedSummary(ctx, pool, stdout); err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	return breakerList(ctx, pool, breaker.NewSharedState(pool, instanceID(), logger), stdout)
}

func feedSummary(ctx context.Context, pool *pgxpool.Pool, stdout io.Writer) error {
	rows, err := pool.Query(ctx, `
		SELECT jurisdiction || '/' || feed, status, coalesce(feature_count, 0),
			coalesce(to_char(date_trunc('second', age), 'FMDD"d" HH24:MI:SS'), '-'),
			coalesce(CASE WHEN status = 'held' THEN held_reason ELSE last_error END, '')
		FROM feed_freshness
		ORDER BY status = 'fresh', status, jurisdiction, feed`)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	defer rows.Close()
	counts := map[string]int{}
	var order []string
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	header := false
	for rows.Next() {
		var feed, status, age, why string
		var n int
		if err := rows.Scan(&feed, &status, &n, &age, &why); err != nil {
			return fmt.Errorf("status: %w", err)
		}
		if counts[status] == 0 {
			order = append(order, status)
		}
		counts[status]++
		if status != "fresh" {
			// Rows written before redaction was complete may still hold a
			// secret: redact before the cut, which could hide a URL's start.
			why = redact.Text(why)
			// Errors wrap outwards: the cause is at the end.
			if r := []rune(why); len(r) > 120 {
				why = "…" + string(r[len(r)-119:])
			}
			if !header {
				fmt.Fprintln(tw, "FEED\tSTATUS\tFEATURES\tAGE\tWHY")
				header = true
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", feed, status, n, age, why)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprint(stdout, "feeds:")
	for _, s := range order {
		fmt.Fprintf(stdout, " %d %s", counts[s], s)
	}
	fmt.Fprintln(stdout)
	return nil
}
