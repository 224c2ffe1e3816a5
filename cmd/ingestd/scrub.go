package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/ingestd/ingestd/config"
)

// cmdScrubSecrets replaces the configuration's secrets, in any of their
// spellings, by REDACTED in every text the tables hold that may quote a
// server (errors, URLs, held reasons, next links, override reasons), over
// the whole polls history: what `ingestd run` does at start for the polls
// since its last scrub. For an operator who adds to the configuration a
// credential that leaked before, or who wants it done before the daemon
// starts.
func cmdScrubSecrets(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("scrub-secrets", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	migrate := fs.Bool("migrate", true, "apply pending migrations first")
	if err := parseFlags(fs, args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() != 0 {
		return usageError{"scrub-secrets takes no arguments"}
	}
	cfg, err := config.Load(c.config)
	if err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	d, err := open(ctx, &c, openOptions{logs: stderr, migrate: *migrate})
	if err != nil {
		return err
	}
	defer d.Close()
	d.secrets.Add(cfg.Secrets()...)
	n, err := d.scrubStored(ctx, true)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "scrubbed %d rows of the %d secrets of %s\n", n, d.secrets.Len(), c.config)
	return nil
}
