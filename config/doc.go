// Package config is ingestd's configuration language: the model of
// jurisdictions.yaml (Config, Jurisdiction, Feed, the defaults, limits,
// breaker, history and dead-letter settings), its parsing, its defaults and
// its validation, with every problem reported at its file:line:column (see
// Error) and all of them at once, so that an operator fixes a file in one
// round and a daemon never starts, or reloads into, a configuration it
// cannot run.
//
// It names no kind: a feed's kind is looked up in the registry of kinds
// (package internal/kinds), whose packages parse their own settings
// through package internal/kindconf. The engine that runs a Config is
// package feeds.
package config
