package config

import "github.com/ingestd/ingestd/redact"

// Secrets returns every credential value the configuration holds, for a
// redact.Secrets: the values of every header (a jurisdiction's and a
// feed's, an arcgis token among them; redact.HeaderSecrets) and, of every
// feed url, its userinfo and the values of its credential parameters
// (every parameter but redact's harmless ones; redact.URLSecrets). A
// server that echoes one back in an error, a page or a link gets it
// scrubbed wherever ingestd writes text.
func (c *Config) Secrets() []string {
	var out []string
	for _, j := range c.Jurisdictions {
		for name, v := range j.Headers {
			out = append(out, redact.HeaderSecrets(name, v)...)
		}
	}
	for _, f := range c.Feeds() {
		for name, v := range f.Headers {
			out = append(out, redact.HeaderSecrets(name, v)...)
		}
		out = append(out, redact.URLSecrets(f.URL)...)
	}
	return out
}
