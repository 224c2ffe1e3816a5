package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
)

const heldUsage = `Usage:
  ingestd held list   [flags]
  ingestd held accept [flags] JURISDICTION/FEED
  ingestd held reject [flags] JURISDICTION/FEED

A guard holds a snapshot instead of applying it when it shrank by more than
max_shrink, came back empty, lies mostly outside the jurisdiction's bbox, or
would remove features while the feed is stale or its origin stuck open. The
feed's features stay as they were until accept applies the held snapshot
(bypassing the guards) or reject discards it; a later poll of the feed
supersedes it. A held snapshot that is no longer whole (a PostgreSQL crash
empties the staged rows, not the record of what was staged) is discarded by
accept, never applied: poll the feed again. accept reads the feed's
conform from -config, so that its common-layer rows follow the snapshot at
once; without it they are conformed again at the feed's next applied poll.
`

func cmdHeld(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"held needs a subcommand\n\n" + heldUsage}
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("held "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return usageError{err.Error()}
	}
	var jurisdiction, feed string
	switch sub {
	case "list":
		if fs.NArg() != 0 {
			return usageError{"held list takes no arguments"}
		}
	case "accept", "reject":
		var ok bool
		jurisdiction, feed, ok = strings.Cut(fs.Arg(0), "/")
		if fs.NArg() != 1 || !ok || jurisdiction == "" || feed == "" {
			return usageError{"held " + sub + " takes one JURISDICTION/FEED"}
		}
	default:
		return usageError{fmt.Sprintf("held: unknown subcommand %q\n\n%s", sub, heldUsage)}
	}

	ctx, stop := signalContext()
	defer stop()
	d, err := open(ctx, &c, openOptions{logs: stderr})
	if err != nil {
		return err
	}
	defer d.Close()
	store := d.store

	switch sub {
	case "list":
		held, err := store.ListHeld(ctx)
		if err != nil {
			return err
		}
		if len(held) == 0 {
			fmt.Fprintln(stdout, "no held snapshots")
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "FEED\tPOLL\tHELD AT\tPREVIOUS\tSNAPSHOT\tREASON")
		for _, h := range held {
			fmt.Fprintf(tw, "%s/%s\t%d\t%s\t%d\t%d\t%s\n", h.Jurisdiction, h.Feed, h.PollID,
				h.HeldAt.Local().Format(time.DateTime), h.Previous, h.Snapshot, h.Reason)
		}
		return tw.Flush()
	case "accept":
		var res feeds.ApplyResult
		if f, why := heldFeedConfig(c.config, jurisdiction, feed); f != nil {
			res, err = store.AcceptHeldWith(ctx, jurisdiction, feed, feeds.NewCommonConform(f.Conform))
		} else {
			// Accepting a held snapshot must not wait on a configuration
			// that does not load: the common rows catch up at the next poll.
			fmt.Fprintf(stderr, "ingestd: %s; %s/%s's common-layer rows are conformed again at its next applied poll\n",
				why, jurisdiction, feed)
			res, err = store.AcceptHeld(ctx, jurisdiction, feed)
		}
		if errors.Is(err, postgis.ErrNoHeld) {
			return fmt.Errorf("%s/%s has no held snapshot", jurisdiction, feed)
		}
		var lost *feeds.StagingLostError
		if errors.As(err, &lost) {
			return fmt.Errorf("%w; it was discarded and nothing was applied", lost)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s/%s: applied %d features (%d added, %d modified, %d removed, %d unchanged)\n",
			jurisdiction, feed, res.Features, res.Added, res.Modified, res.Removed, res.Unchanged)
	case "reject":
		err := store.RejectHeld(ctx, jurisdiction, feed)
		if errors.Is(err, postgis.ErrNoHeld) {
			return fmt.Errorf("%s/%s has no held snapshot", jurisdiction, feed)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s/%s: held snapshot discarded; features unchanged\n", jurisdiction, feed)
	}
	return nil
}

// heldFeedConfig is the feed's configuration from file path, or nil and
// why not.
func heldFeedConfig(path, jurisdiction, feed string) (*config.Feed, string) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, fmt.Sprintf("the configuration did not load (%v)", err)
	}
	f, ok := cfg.Feed(jurisdiction + "/" + feed)
	if !ok {
		return nil, fmt.Sprintf("no feed %s/%s in %s", jurisdiction, feed, path)
	}
	return f, ""
}
