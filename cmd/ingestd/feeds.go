package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/feeds"
)

const feedsUsage = `Usage:
  ingestd feeds prune [-dry-run] [flags]

prune marks as removed every feed that is absent from the configuration
(-config) and abandons its open dead letters, deleting their staged pages.
Features and history stay. Nothing else ever does this: an instance that
starts, or a one-off command, with a configuration lacking some feeds leaves
them alone (they may be another instance's), and a daemon's reload marks
removed only the feeds that its own previous configuration had.
`

func cmdFeeds(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"feeds needs a subcommand\n\n" + feedsUsage}
	}
	sub, args := args[0], args[1:]
	if sub != "prune" {
		return usageError{fmt.Sprintf("feeds: unknown subcommand %q\n\n%s", sub, feedsUsage)}
	}
	fs := flag.NewFlagSet("feeds prune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	dryRun := fs.Bool("dry-run", false, "print what would be pruned, change nothing")
	if err := parseFlags(fs, args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() != 0 {
		return usageError{"feeds prune takes no arguments"}
	}
	cfg, err := config.Load(c.config)
	if err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	d, err := open(ctx, &c, openOptions{})
	if err != nil {
		return err
	}
	defer d.Close()
	keep := make([]feeds.FeedInfo, 0, len(cfg.Feeds()))
	for _, f := range cfg.Feeds() {
		keep = append(keep, feeds.FeedInfo{Jurisdiction: f.Jurisdiction, Feed: f.ID})
	}
	pruned, err := d.store.Prune(ctx, keep, *dryRun)
	if err != nil {
		return err
	}
	verb, letters := "removed", "abandoned"
	if *dryRun {
		verb, letters = "would remove", "would abandon"
	}
	n := 0
	for _, p := range pruned {
		line := fmt.Sprintf("%s %s/%s", verb, p.Jurisdiction, p.Feed)
		if len(p.Letters) > 0 {
			ids := make([]string, len(p.Letters))
			for i, id := range p.Letters {
				ids[i] = fmt.Sprint(id)
			}
			line += fmt.Sprintf("; %s dead letter %s", letters, strings.Join(ids, ", "))
			n += len(p.Letters)
		}
		fmt.Fprintln(stdout, line)
	}
	if *dryRun {
		fmt.Fprintf(stdout, "dry run: %d feeds not in %s and %d dead letters would be pruned; nothing changed\n", len(pruned), c.config, n)
		return nil
	}
	fmt.Fprintf(stdout, "%d feeds not in %s marked removed, %d dead letters abandoned\n", len(pruned), c.config, n)
	return nil
}

// absentFeeds returns "jurisdiction/feed" of every feed the database holds
// as configured (or with an open dead letter) that d's configuration
// lacks: what `ingestd feeds prune` would remove, asked without changing
// anything.
func (d *daemon) absentFeeds(ctx context.Context) ([]string, error) {
	keep := make([]feeds.FeedInfo, 0, len(d.cfg.Feeds()))
	for _, f := range d.cfg.Feeds() {
		keep = append(keep, feeds.FeedInfo{Jurisdiction: f.Jurisdiction, Feed: f.ID})
	}
	absent, err := d.store.Prune(ctx, keep, true)
	if err != nil {
		return nil, fmt.Errorf("feeds absent from the configuration: %w", err)
	}
	out := make([]string, len(absent))
	for i, p := range absent {
		out[i] = p.Jurisdiction + "/" + p.Feed
	}
	return out, nil
}

// absentFeedsWarning says what absent feeds are and what to do about
// them; "" when there are none. They may be another instance's, which is
// why nothing prunes them unasked.
func absentFeedsWarning(absent []string, config string) string {
	if len(absent) == 0 {
		return ""
	}
	const shown = 5
	list := strings.Join(absent[:min(len(absent), shown)], ", ")
	if len(absent) > shown {
		list += fmt.Sprintf(" and %d more", len(absent)-shown)
	}
	return fmt.Sprintf("the database holds %d feeds that %s does not (%s): they stay in `ingestd status` and on the status page; "+
		"unless another instance polls them, `ingestd feeds prune -config %s` marks them removed", len(absent), config, list, config)
}
