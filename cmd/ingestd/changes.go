package main

import (
	"bufio"
	"flag"
	"io"
	"strings"
)

const changesUsage = `Usage:
  ingestd changes [flags] -since POLL JURISDICTION/FEED

Prints the changes of the feed's polls after poll POLL (0: every change
kept), in poll order, as GeoJSON: one Feature a line, its id the feature's,
its geometry the new version's (the old one's when removed), its properties
{"change": "added"|"modified"|"removed", "poll_id", "applied_at", "old",
"new"} with both versions' properties (null where there is none, or the
feed's history was off or pruned). A consumer remembers the last poll_id it
read and passes it as -since next time; LISTEN ingestd_changes tells it
when there is more (docs/querying.md).

With -common it prints the changes of the feed's rows in its common layer
instead (ingestd_common_changes_since): properties {"change", "poll_id",
"layer", "applied_at", "old", "new"} with both rows' conformed values.
`

func cmdChanges(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("changes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { io.WriteString(stderr, changesUsage); fs.PrintDefaults() }
	var c common
	c.register(fs)
	since := fs.Int64("since", -1, "print the changes of polls after this poll id (0: all)")
	commonRows := fs.Bool("common", false, "print the changes of the feed's common-layer rows")
	if err := parseFlags(fs, args); err != nil {
		return usageError{err.Error()}
	}
	jurisdiction, feed, ok := strings.Cut(fs.Arg(0), "/")
	if fs.NArg() != 1 || !ok || jurisdiction == "" || feed == "" {
		return usageError{"changes takes one JURISDICTION/FEED\n\n" + changesUsage}
	}
	if *since < 0 {
		return usageError{"changes needs -since POLL (0 for every change kept)\n\n" + changesUsage}
	}
	ctx, stop := signalContext()
	defer stop()
	d, err := open(ctx, &c, openOptions{logs: stderr})
	if err != nil {
		return err
	}
	defer d.Close()
	w := bufio.NewWriter(stdout)
	changesSince := d.store.ChangesSince
	if *commonRows {
		changesSince = d.store.CommonChangesSince
	}
	err = changesSince(ctx, jurisdiction, feed, *since, func(line []byte) error {
		if _, err := w.Write(line); err != nil {
			return err
		}
		return w.WriteByte('\n')
	})
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return err
}
