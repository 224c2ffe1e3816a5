package feeds

// Values of a feed's redirects setting.
const (
	// RedirectsSameOrigin follows a redirect only within the feed's origin
	// (scheme://host:port); a redirect elsewhere fails the request, naming
	// the target. The default: the breaker and pacing of the configured
	// origin must not be charged for another server.
	RedirectsSameOrigin = "same_origin"
	// RedirectsFollow follows redirects to other origins too.
	RedirectsFollow = "follow"
)
