package feeds

import (
	"time"

	"github.com/ingestd/ingestd/wfs"
)

// Config is a parsed and validated jurisdictions.yaml. Defaults have been merged
// into every feed, so each Feed is complete on its own.
type Config struct {
	// Path is the file the config was read from.
	Path string `yaml:"-"`
	// MaxInFlight bounds the HTTP requests in flight across all feeds (default 20).
	MaxInFlight int `yaml:"max_in_flight"`
	// Defaults apply to every feed that does not set the field itself.
	Defaults Defaults `yaml:"defaults"`
	// Jurisdictions lists the publishers and their feeds.
	Jurisdictions []Jurisdiction `yaml:"jurisdictions"`
}

// Defaults are the feed settings inherited by every feed.
type Defaults struct {
	Schedule       string   `yaml:"schedule"`
	Timeout        Duration `yaml:"timeout"`
	RequestTimeout Duration `yaml:"request_timeout"`
	PageSize       int      `yaml:"page_size"`
	Version        string   `yaml:"version"`
	OutputFormat   string   `yaml:"output_format"`
}

// Jurisdiction is one publisher (a county, a city) and its feeds.
type Jurisdiction struct {
	ID       string `yaml:"id"`
	Name     string `yaml:"name"`
	Timezone string `yaml:"timezone"`
	Feeds    []Feed `yaml:"feeds"`

	// Location is Timezone loaded (UTC when empty).
	Location *time.Location `yaml:"-"`
}

// Feed is one layer to mirror.
type Feed struct {
	ID             string   `yaml:"id"`
	Kind           string   `yaml:"kind"` // "wfs" or "geojson"
	URL            string   `yaml:"url"`
	TypeName       string   `yaml:"type_name"`
	Version        string   `yaml:"version"`
	OutputFormat   string   `yaml:"output_format"`
	PageSize       int      `yaml:"page_size"`
	IDProperty     string   `yaml:"id_property"`
	SortBy         string   `yaml:"sort_by"`
	Schedule       string   `yaml:"schedule"`
	Timeout        Duration `yaml:"timeout"`
	RequestTimeout Duration `yaml:"request_timeout"`

	// Jurisdiction is the ID of the jurisdiction the feed belongs to.
	Jurisdiction string `yaml:"-"`
	// Location is the jurisdiction's time zone, in which Schedule is read.
	Location *time.Location `yaml:"-"`
}

// Key returns "jurisdiction/feed", the feed's name in logs, SQL and the CLI.
func (f *Feed) Key() string { return f.Jurisdiction + "/" + f.ID }

// Layer returns what the wfs client needs to fetch the feed.
func (f *Feed) Layer() wfs.Layer {
	return wfs.Layer{
		Kind:         f.Kind,
		URL:          f.URL,
		TypeName:     f.TypeName,
		Version:      f.Version,
		OutputFormat: f.OutputFormat,
		PageSize:     f.PageSize,
		IDProperty:   f.IDProperty,
		SortBy:       f.SortBy,
	}
}

// Duration is a time.Duration written in YAML as "90s", "5m" or "1h30m".
type Duration time.Duration
