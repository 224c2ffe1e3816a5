package socrata

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/source"
)

// Kind is the feed kind this package fetches: a dataset of a Socrata portal.
const Kind = "socrata"

// TokenHeader carries a socrata feed's app token: in a header, as the
// SODA documentation recommends, never in a URL, so that it is not in the
// portal's logs, ours, or any table.
const TokenHeader = "X-App-Token"

// Page sizes ($limit). SODA 2.1 allows any $limit, but its own paging
// guide and 2.0 endpoints stop at 50,000; a page is also one staging
// transaction.
const (
	DefaultPageSize = 1000
	MaxPageSize     = 50000
)

// Settings are a socrata layer's own settings (source.Layer.Settings). The
// app token is not here: the config turns it into a header (TokenHeader),
// which is never logged.
type Settings struct {
	// Dataset is the dataset's identifier, its "4x4" (abcd-1234).
	Dataset string
	// GeometryColumn is the column whose values are the features'
	// geometries; "" means the metadata's first geometry column.
	GeometryColumn string
}

// Identity lists the dataset and the geometry column.
func (s Settings) Identity() []string { return []string{s.Dataset, s.GeometryColumn} }

// settingsOf returns l's socrata settings (zero when it has none).
func settingsOf(l source.Layer) Settings {
	s, _ := l.Settings.(Settings)
	return s
}

// fourByFour is a Socrata dataset identifier.
var fourByFour = regexp.MustCompile(`^[a-z0-9]{4}-[a-z0-9]{4}$`)

// Spec is the socrata kind as the registry of kinds lists it: dataset,
// app_token and geometry_column, refused on a feed of another kind (a
// token must not be silently dropped).
func Spec() kindconf.Spec {
	return kindconf.Spec{Name: Kind, Keys: []string{"dataset", "app_token", "geometry_column"}, Strict: true, Parse: parseFeed,
		NewFetcher: newFetcher}
}

// newFetcher is the socrata kind's fetcher, as the registry of kinds builds
// it: a Client over the process's shared dependencies.
func newFetcher(d kindconf.FetcherDeps) source.Fetcher {
	return NewClient(d.HTTP, d.Breakers, d.Logger, WithUserAgent(d.UserAgent))
}

// parseFeed reads a socrata feed's settings: the url is the dataset
// (…/resource/abcd-1234.json, …/d/abcd-1234, the dataset's page) or the
// portal with dataset: abcd-1234, and becomes the dataset's resource URL;
// app_token (sent as X-App-Token) from ${VARIABLE}; geometry_column;
// page_size (default 1000, at most 50,000; the defaults' page_size does
// not apply).
func parseFeed(f *kindconf.Feed) source.Settings {
	var s Settings
	f.Ignore("id_property")
	switch {
	case f.PageSizeNode == nil:
		f.PageSize = DefaultPageSize
	case f.PageSize < 1 || f.PageSize > MaxPageSize:
		f.Errorf(f.PageSizeNode, f.Field("page_size"), "a socrata dataset is read in pages of 1 to %d rows ($limit), got %d", MaxPageSize, f.PageSize)
		f.PageSize = DefaultPageSize
	}
	s.Dataset = parseDataset(f)
	if v, present := f.Str(f.Map, "geometry_column", f.Path); present && v.OK {
		if strings.TrimSpace(v.Val) == "" {
			f.Errorf(v.Node, f.Field("geometry_column"), "empty: leave it out for the dataset's first geometry column")
		} else {
			s.GeometryColumn = strings.TrimSpace(v.Val)
		}
	}
	readToken(f)
	return s
}

// parseDataset finds the dataset's 4x4 in the feed's url or its dataset key,
// and rewrites the url as the dataset's resource; "" when refused.
func parseDataset(f *kindconf.Feed) string {
	if f.URL == "" {
		return ""
	}
	at := f.At("url")
	u, err := url.Parse(f.URL)
	if err != nil {
		return ""
	}
	if q := u.Query(); q.Has("$$app_token") || q.Has("app_token") {
		f.Errorf(at, f.Field("url"), "the url has an app token: put it in the feed's app_token: (sent in a header, never logged), not in the url")
		f.URL = ""
		return ""
	}
	if u.RawQuery != "" {
		f.Warnf(at, f.Field("url"), "the url's query string is ignored: a socrata feed reads the whole dataset")
	}
	path := strings.Trim(u.Path, "/")
	id := ""
	if v, present := f.Str(f.Map, "dataset", f.Path); present && v.OK {
		id = strings.ToLower(strings.TrimSpace(v.Val))
		if !fourByFour.MatchString(id) {
			f.Errorf(v.Node, f.Field("dataset"), "a dataset identifier is its 4x4, like abcd-1234; got %q", v.Val)
			return ""
		}
		if path != "" {
			f.Errorf(at, f.Field("url"), "with dataset:, the url is the portal (https://data.example.gov), without a path")
			f.URL = ""
			return ""
		}
	} else {
		last := path[strings.LastIndex(path, "/")+1:]
		last = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(last, ".json"), ".geojson"), ".csv")
		if !fourByFour.MatchString(last) {
			f.Errorf(at, f.Field("url"), "a socrata url is a dataset, ending with its 4x4 (…/resource/abcd-1234.json, …/d/abcd-1234), or the portal with dataset: abcd-1234")
			f.URL = ""
			return ""
		}
		id = last
	}
	f.URL = (&url.URL{Scheme: u.Scheme, User: u.User, Host: u.Host, Path: "/resource/" + id + ".json"}).String()
	return id
}

// readToken turns the feed's app_token into its TokenHeader.
func readToken(f *kindconf.Feed) {
	v, present := f.Str(f.Map, "app_token", f.Path)
	if !present || !v.OK {
		return
	}
	switch {
	case !v.Expanded:
		f.Errorf(v.Node, f.Field("app_token"), "write the app token as ${VARIABLE}: a token in the file ends up in backups and version control")
	case strings.TrimSpace(v.Val) == "" || strings.ContainsAny(v.Val, "\r\n\x00 "):
		f.Errorf(v.Node, f.Field("app_token"), "the app token (from the environment) is empty or holds white space")
	default:
		h := make(map[string]string, len(f.Headers)+1)
		for k, val := range f.Headers {
			h[k] = val
		}
		h[TokenHeader] = v.Val
		f.Headers = h
	}
}
