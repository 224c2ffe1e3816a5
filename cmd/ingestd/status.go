package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/errtext"
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
	full := fs.Bool("full", false, "print errors whole (default: their first clause and root cause, in "+strconv.Itoa(statusErrorWidth)+" characters)")
	all := fs.Bool("all", false, "also list the feeds `ingestd feeds prune` marked removed")
	if err := parseFlags(fs, args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() != 0 {
		return usageError{"status takes no arguments"}
	}
	ctx, stop := signalContext()
	defer stop()
	d, err := open(ctx, &c, openOptions{logs: stderr})
	if err != nil {
		return err
	}
	defer d.Close()

	if err := feedSummary(ctx, d.store, stdout, summaryOptions{full: *full, all: *all}); err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	return breakerList(ctx, d, stdout)
}

// statusErrorWidth is how much of an error `ingestd status` prints without -full.
const statusErrorWidth = 120

// summaryOptions are status's -full and -all.
type summaryOptions struct {
	full bool // errors whole
	all  bool // removed feeds too
}

func feedSummary(ctx context.Context, store *postgis.Store, stdout io.Writer, o summaryOptions) error {
	rows, err := store.Freshness(ctx)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	counts := map[string]int{}
	var order []string
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	header := false
	hidden := 0
	for _, r := range rows {
		if r.Status == "removed" && !o.all {
			// Pruned on purpose: not news, unless asked for.
			hidden++
			continue
		}
		if counts[r.Status] == 0 {
			order = append(order, r.Status)
		}
		counts[r.Status]++
		if r.Status != "fresh" {
			// Rows written before redaction was complete may still hold a
			// secret: redact before the cut, which could hide a URL's start.
			why := redact.Text(r.Why)
			// Errors wrap outwards: the first clause says what failed, the
			// end why; a cut keeps both.
			why = strings.ReplaceAll(why, "\n", " ")
			if !o.full {
				why = errtext.Short(why, statusErrorWidth)
			}
			if !header {
				fmt.Fprintln(tw, "FEED\tSTATUS\tFEATURES\tAGE\tWHY")
				header = true
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", r.Feed, r.Status, r.Features, r.Age, why)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprint(stdout, "feeds:")
	for _, s := range order {
		fmt.Fprintf(stdout, " %d %s", counts[s], s)
	}
	if hidden > 0 {
		fmt.Fprintf(stdout, " (%d removed not shown: -all)", hidden)
	}
	fmt.Fprintln(stdout)
	return nil
}
