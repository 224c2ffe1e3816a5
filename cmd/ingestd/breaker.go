package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/breaker/pgshare"
	"github.com/ingestd/ingestd/redact"
)

const breakerUsage = `Usage:
  ingestd breaker list                                  every origin: state, open_until, override, feeds
  ingestd breaker open  ORIGIN [--for 2h] [--reason TEXT]   refuse every request to ORIGIN, on every instance
  ingestd breaker close ORIGIN [--for 2h] [--reason TEXT]   admit every request to ORIGIN, breaker or not
  ingestd breaker auto  ORIGIN [--reason TEXT]              let the breaker decide again

ORIGIN is a URL (a feed's URL will do); it is reduced to scheme://host:port.
Overrides are stored in breaker_state and honoured by every running instance
within a second.`

// cmdBreaker shows and overrides the shared breaker verdicts.
func cmdBreaker(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"breaker needs a subcommand\n\n" + breakerUsage}
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("breaker "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, breakerUsage) }
	var c common
	c.register(fs)
	var forDur time.Duration
	var reason string
	var override breaker.Override
	switch sub {
	case "list":
	case "open", "close":
		fs.DurationVar(&forDur, "for", 0, "lift the override after this long (default: until changed)")
		fs.StringVar(&reason, "reason", "", "why: logged by every instance and shown by list")
		override = breaker.OverrideOpen
		if sub == "close" {
			override = breaker.OverrideClosed
		}
	case "auto":
		fs.StringVar(&reason, "reason", "", "why: logged by every instance")
		override = breaker.OverrideNone
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, breakerUsage)
		return nil
	default:
		return usageError{fmt.Sprintf("breaker: unknown subcommand %q\n\n%s", sub, breakerUsage)}
	}
	if err := parseFlags(fs, args); err != nil {
		return usageError{err.Error()}
	}
	operands := fs.Args()
	if forDur < 0 {
		return usageError{"--for must not be negative"}
	}
	origin, err := breakerOrigin(sub, operands)
	if err != nil {
		return err
	}

	ctx, stop := signalContext()
	defer stop()
	d, err := open(ctx, &c, openOptions{logs: stderr})
	if err != nil {
		return err
	}
	defer d.Close()

	if sub == "list" {
		return breakerList(ctx, d, stdout)
	}
	return setOverride(ctx, d, stdout, pgshare.OverrideRequest{
		// Stored and shown to everyone: a feed URL pasted into the reason
		// keeps its host and path, not its token.
		Origin: origin, Override: override, For: forDur, Reason: redact.Text(reason), By: operator(d.id),
	})
}

// breakerOrigin checks the operands of breaker sub: none for list, one
// ORIGIN otherwise, returned reduced to scheme://host:port.
func breakerOrigin(sub string, operands []string) (string, error) {
	switch {
	case sub == "list" && len(operands) != 0:
		return "", usageError{"breaker list takes no arguments"}
	case sub != "list" && len(operands) != 1:
		return "", usageError{fmt.Sprintf("breaker %s takes one ORIGIN\n\n%s", sub, breakerUsage)}
	case sub != "list":
		origin, err := breaker.ParseOrigin(operands[0])
		if err != nil {
			return "", usageError{err.Error()}
		}
		return origin, nil
	}
	return "", nil
}

// setOverride stores req and says what it set and how many parked polls
// it made due.
func setOverride(ctx context.Context, d *daemon, stdout io.Writer, req pgshare.OverrideRequest) error {
	origin := req.Origin
	res, err := d.shared.SetOverride(ctx, req)
	if res.Origin != "" {
		fmt.Fprintf(stdout, "%s: override %s\n", origin, describeOverride(res.Verdict, res.UpdatedAt))
	}
	if err != nil {
		return err
	}
	if res.Resumed > 0 {
		when := "now"
		if !res.ResumeAt.IsZero() {
			when = "at " + formatUntil(res.ResumeAt, res.UpdatedAt)
		}
		fmt.Fprintf(stdout, "%s: %d parked polls due %s\n", origin, res.Resumed, when)
	}
	return nil
}

// operator names who set an override: user@id (id is the process's
// host:pid), so that the log and breaker_state say which person on which
// machine did it.
func operator(id string) string {
	name := os.Getenv("SUDO_USER")
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		} else {
			name = envOr("USER", "unknown")
		}
	}
	return name + "@" + id
}

// breakerList prints every origin's verdict with the feeds it holds back.
func breakerList(ctx context.Context, d *daemon, stdout io.Writer) error {
	verdicts, now, err := d.shared.Verdicts(ctx)
	if err != nil {
		return err
	}
	feeds, err := d.store.FeedsByOrigin(ctx)
	if err != nil {
		return err
	}
	// Origins that feeds use but that never had a verdict are closed; list
	// them too, so the table answers "what does ingestd talk to".
	known := make(map[string]bool, len(verdicts))
	for _, v := range verdicts {
		known[v.Origin] = true
	}
	for origin := range feeds {
		if !known[origin] {
			verdicts = append(verdicts, breaker.Verdict{Origin: origin})
		}
	}
	slices.SortFunc(verdicts, func(a, b breaker.Verdict) int { return strings.Compare(a.Origin, b.Origin) })

	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ORIGIN\tSTATE\tOPEN_UNTIL\tOVERRIDE\tUPDATED_BY\tFEEDS")
	for _, v := range verdicts {
		state := v.State.String()
		if v.State == breaker.StateHalfOpen && v.ProbeOwner != "" {
			state += " (probe " + v.ProbeOwner + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", v.Origin, state, formatUntil(v.OpenUntil, now),
			describeOverride(v, now), orDash(v.UpdatedBy), orDash(strings.Join(feeds[v.Origin], ",")))
	}
	return tw.Flush()
}

// describeOverride renders an override with its end, author and reason; a
// lapsed one says so, since instances no longer honour it.
func describeOverride(v breaker.Verdict, now time.Time) string {
	if v.Override == breaker.OverrideNone {
		return "none"
	}
	s := v.Override.String()
	if !v.OverrideUntil.IsZero() {
		if v.EffectiveOverride(now) == breaker.OverrideNone {
			s += " (lapsed " + v.OverrideUntil.UTC().Format(time.RFC3339) + ")"
		} else {
			s += " until " + formatUntil(v.OverrideUntil, now)
		}
	}
	var who []string
	if v.OverrideBy != "" {
		who = append(who, "by "+v.OverrideBy)
	}
	if v.OverrideReason != "" {
		// The reason is the operator's free text: a pasted feed URL must not
		// bring its token into every listing.
		who = append(who, fmt.Sprintf("%q", redact.Text(v.OverrideReason)))
	}
	if len(who) > 0 {
		s += " [" + strings.Join(who, ": ") + "]"
	}
	return s
}

func formatUntil(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	s := t.UTC().Format(time.RFC3339)
	if d := t.Sub(now); d > 0 {
		s += " (in " + d.Round(time.Second).String() + ")"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
