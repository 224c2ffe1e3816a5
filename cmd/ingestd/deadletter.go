package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ingestd/ingestd/deadletter"
	"github.com/ingestd/ingestd/internal/errtext"
	"github.com/ingestd/ingestd/redact"
)

const deadLetterUsage = `Usage:
  ingestd deadletter list    [flags] [--status S] [--feed JURISDICTION/FEED]
  ingestd deadletter replay  [flags] ID | --feed JURISDICTION/FEED | --all-due
  ingestd deadletter purge   [flags] --done [--abandoned] --older-than 30d

replay runs the selected pending rows now, ignoring retry_after (an
abandoned row named by ID is revived first); rows another instance is
replaying are left to it. purge deletes finished rows only.
`

func cmdDeadLetter(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"deadletter needs a subcommand\n\n" + deadLetterUsage}
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("deadletter "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	ctx, stop := signalContext()
	defer stop()
	switch sub {
	case "list":
		return deadLetterList(ctx, fs, &c, args, stdout)
	case "replay":
		return deadLetterReplay(ctx, fs, &c, args, stdout, stderr)
	case "purge":
		return deadLetterPurge(ctx, fs, &c, args, stdout)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, deadLetterUsage)
		return nil
	}
	return usageError{fmt.Sprintf("deadletter: unknown subcommand %q\n\n%s", sub, deadLetterUsage)}
}

// deadLetterList prints the rows the flags select, newest first.
func deadLetterList(ctx context.Context, fs *flag.FlagSet, c *common, args []string, stdout io.Writer) error {
	status := fs.String("status", "", "only rows in this status: pending, replaying, done, abandoned")
	feed := fs.String("feed", "", "only rows of this JURISDICTION/FEED")
	limit := fs.Int("limit", 100, "at most this many rows, newest first")
	if err := parseFlags(fs, args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() != 0 {
		return usageError{"deadletter list takes no arguments"}
	}
	f := deadletter.Filter{Feed: *feed, Limit: *limit}
	if *status != "" {
		st, err := deadletter.ParseStatus(*status)
		if err != nil {
			return usageError{err.Error()}
		}
		f.Status = st
	}
	d, err := open(ctx, c, openOptions{})
	if err != nil {
		return err
	}
	defer d.Close()
	letters, err := d.queue.List(ctx, f)
	if err != nil {
		return err
	}
	printLetters(stdout, letters)
	return nil
}

// deadLetterReplay replays the pending rows the operands select now, and
// prints them as they ended; it fails unless every one is done.
func deadLetterReplay(ctx context.Context, fs *flag.FlagSet, c *common, args []string, stdout, stderr io.Writer) error {
	feed := fs.String("feed", "", "replay the open dead letter of JURISDICTION/FEED")
	allDue := fs.Bool("all-due", false, "replay every pending row, whatever its retry_after")
	migrate := fs.Bool("migrate", true, "apply pending migrations first")
	quiet := fs.Bool("quiet", false, "no progress line (there is none unless stderr is a terminal)")
	if err := parseFlags(fs, args); err != nil {
		return usageError{err.Error()}
	}
	f, err := replayFilter(fs, *feed, *allDue)
	if err != nil {
		return err
	}
	prog := newProgress(stderr, *quiet)
	d, err := open(ctx, c, openOptions{logs: stderr, migrate: *migrate, poll: true, progress: prog})
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.manager.Update(ctx, d.cfg); err != nil {
		return err
	}
	// An abandoned row named by ID is revived first (deadletter decides).
	prog.Start()
	claimed, err := d.replayer.ReplayNow(ctx, f)
	prog.Stop()
	if err != nil {
		return d.secrets.Wrap(err)
	}
	if len(claimed) == 0 {
		fmt.Fprintln(stderr, "ingestd: no pending dead letter matches (rows being replayed by an instance are left to it)")
		return errReported
	}
	ids := make([]int64, len(claimed))
	for i, l := range claimed {
		ids[i] = l.ID
	}
	after, err := d.queue.List(ctx, deadletter.Filter{IDs: ids})
	if err != nil {
		return err
	}
	printLetters(stdout, after)
	for _, l := range after {
		if l.Status != deadletter.StatusDone {
			return errReported
		}
	}
	return nil
}

// replayFilter selects the pending rows to replay from exactly one of an ID
// operand, --feed and --all-due.
func replayFilter(fs *flag.FlagSet, feed string, allDue bool) (deadletter.Filter, error) {
	f := deadletter.Filter{Status: deadletter.StatusPending}
	chosen := 0
	if fs.NArg() == 1 {
		n, err := strconv.ParseInt(fs.Arg(0), 10, 64)
		if err != nil || n <= 0 {
			return f, usageError{fmt.Sprintf("deadletter replay: %q is not a dead letter id", fs.Arg(0))}
		}
		f.IDs = []int64{n}
		chosen++
	} else if fs.NArg() > 1 {
		return f, usageError{"deadletter replay takes one ID"}
	}
	if feed != "" {
		f.Feed = feed
		chosen++
	}
	if allDue {
		chosen++
	}
	if chosen != 1 {
		return f, usageError{"deadletter replay: give exactly one of ID, --feed or --all-due"}
	}
	return f, nil
}

// deadLetterPurge deletes the finished rows the flags select.
func deadLetterPurge(ctx context.Context, fs *flag.FlagSet, c *common, args []string, stdout io.Writer) error {
	done := fs.Bool("done", false, "purge rows that were replayed")
	abandoned := fs.Bool("abandoned", false, "purge rows that were given up")
	olderThan := fs.String("older-than", "", "purge rows finished longer ago than this (30d, 12h)")
	if err := parseFlags(fs, args); err != nil {
		return usageError{err.Error()}
	}
	var statuses []deadletter.Status
	if *done {
		statuses = append(statuses, deadletter.StatusDone)
	}
	if *abandoned {
		statuses = append(statuses, deadletter.StatusAbandoned)
	}
	if len(statuses) == 0 || *olderThan == "" || fs.NArg() != 0 {
		return usageError{"deadletter purge needs --done and/or --abandoned, and --older-than"}
	}
	age, err := parseAge(*olderThan)
	if err != nil {
		return usageError{err.Error()}
	}
	d, err := open(ctx, c, openOptions{})
	if err != nil {
		return err
	}
	defer d.Close()
	n, err := d.queue.Purge(ctx, statuses, age)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "purged %d dead letters\n", n)
	return nil
}

// parseAge reads a duration that may count days ("30d"), which
// time.ParseDuration does not.
func parseAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err == nil && n > 0 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	} else if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, nil
	}
	return 0, errors.New("--older-than " + strconv.Quote(s) + ": want e.g. 30d or 12h")
}

func printLetters(w io.Writer, letters []*deadletter.Letter) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tFEED\tSTATUS\tREASON\tATTEMPTS\tRETRY_AFTER\tNEXT_PAGE\tORIGIN\tLAST_ERROR")
	for _, l := range letters {
		// Redacted before the cut (see feedSummary): old rows may hold secrets.
		msg := errtext.Short(strings.ReplaceAll(redact.Text(l.LastError), "\n", " "), 80)
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%d\t%s\t%s\n", l.ID, l.Key(), l.Status, l.Reason, l.Attempts,
			l.RetryAfter.Local().Format(time.DateTime), l.Checkpoint.Page, l.Origin, strings.ReplaceAll(msg, "\n", " "))
	}
	_ = tw.Flush()
}
