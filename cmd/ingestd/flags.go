package main

import "flag"

// parseFlags parses fs's flags wherever they stand among the operands, on
// every subcommand, so that `ingestd changes -since 0 metro/cycle_hire
// -config x.yaml` works as well as flags first; fs.Args() then holds the
// operands in order. A "--" ends the flags: what follows is operands even
// if it starts with a dash.
func parseFlags(fs *flag.FlagSet, args []string) error {
	var operands []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			operands = append(operands, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		operands = append(operands, rest[0])
		args = rest[1:]
	}
	// Parsing "--" alone sets no flag and leaves exactly the operands.
	return fs.Parse(append([]string{"--"}, operands...))
}
