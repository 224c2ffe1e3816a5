package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/ingestd/ingestd/oaimport"
)

// cmdImport writes a config from another project's catalog; the one
// source it reads is OpenAddresses' (package oaimport).
func cmdImport(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "openaddresses" {
		return usageError{"import takes a catalog: import openaddresses [-o FILE] PATH..."}
	}
	fs := flag.NewFlagSet("import openaddresses", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "write the config to `FILE` (default: standard output)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() == 0 {
		return usageError{"import openaddresses takes the catalog's source files or folders (sources/)"}
	}
	srcs, err := oaimport.Files(fs.Args())
	if err != nil {
		return err
	}
	if len(srcs) == 0 {
		return fmt.Errorf("openaddresses: no .json source file under %v", fs.Args())
	}
	data, tally, err := oaimport.Import(srcs)
	if err != nil {
		return err
	}
	if *out == "" {
		if _, err := stdout.Write(data); err != nil {
			return err
		}
	} else if err := os.WriteFile(*out, data, 0o644); err != nil {
		return err
	}
	fmt.Fprint(stderr, tally)
	return nil
}
