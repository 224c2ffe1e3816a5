// Package httpcall is the one way ingestd calls a source: a logical call
// through the breaker of the request's origin (breaker.Registry.Do), each
// attempt bounded by its own timeout, the feed's headers sent to its own
// origin only, redirects within the origin followed and to another origin
// refused or followed through the target's own breaker, the body
// decompressed by its bytes (gzip, layered gzip) rather than its
// Content-Encoding, bounded by the feed's body limit, past a UTF-8 BOM, and
// every URL in an error redacted.
//
// A protocol package (wfs, and the next kinds) supplies what is its own:
// the request (Request), and, in the AttemptFunc Client.Call runs for each
// attempt that got a response, its classification rules and its decoder.
// The verdict helpers (ReadFailure, FeedsFault, Sniff, LeadingKeys,
// ParseRetryAfter, HTMLTitle; Throttled, StatusVerdict, ErrorVerdict,
// BodyFailure and Expected.NotDataVerdict for the protocol-independent
// part of a classification; Attempt.Verdict, Attempt.OriginFailure and
// Attempt.StreamFailed in an AttemptFunc) carry the rules every protocol
// shares: transport and server errors are the origin's, content errors the
// feed's. The errors of a body that is not data (ErrHTMLBody, ErrEmptyBody,
// ErrUnrecognizedBody) are declared here once for every kind.
package httpcall
