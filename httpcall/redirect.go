package httpcall

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/redact"
)

// MaxRedirects bounds the redirects of one logical request, same-origin hops
// and followed cross-origin hops together. Real servers redirect once or
// twice (http to https, a moved path); a loop would otherwise cost ten
// requests per attempt.
const MaxRedirects = 5

// redirectKey is the context key of a request's *redirectState.
type redirectKey struct{}

// redirectState is what checkRedirect knows of one logical request, carried
// in its context because http.Client's CheckRedirect is one function for
// every feed.
type redirectState struct {
	// follow is the request's CrossOriginRedirects.
	follow bool
	// hops counts the redirects of earlier logical calls of this request
	// (each followed cross-origin hop starts a new call).
	hops int
	// next is the cross-origin target checkRedirect stopped at, for call to
	// follow through the target's breaker; viaHops is the number of hops of
	// the attempt that led there.
	next    *url.URL
	viaHops int
}

// errFollow is the Err of an attempt that stopped at a cross-origin
// redirect the request allows: call follows it with a fresh logical call.
var errFollow = errors.New("following a redirect to another origin")

// checkRedirect is the CheckRedirect of the Client's http.Client. Within the
// request's origin it follows, up to MaxRedirects. To another origin it
// refuses (*RedirectError) unless the request allows it; then it stops there
// (http.ErrUseLastResponse) so that the target is asked through its own
// breaker, pacing and retries, and so that the feed's headers, meant for its
// own origin, are not sent along (net/http would copy them).
func checkRedirect(req *http.Request, via []*http.Request) error {
	st, _ := req.Context().Value(redirectKey{}).(*redirectState)
	prev := via[len(via)-1]
	refuse := func(reason string) error {
		return &RedirectError{URL: redact.URL(prev.URL.String()), Target: redact.URL(req.URL.String()), Reason: reason}
	}
	if s := strings.ToLower(req.URL.Scheme); s != "http" && s != "https" {
		return refuse(fmt.Sprintf("scheme %q is not http or https", req.URL.Scheme))
	}
	hops := len(via)
	if st != nil {
		hops += st.hops
	}
	if hops > MaxRedirects {
		return refuse(fmt.Sprintf("more than %d redirects", MaxRedirects))
	}
	from, to := breaker.Origin(via[0].URL), breaker.Origin(req.URL)
	if from == to {
		return nil
	}
	if st == nil || !st.follow {
		return refuse(fmt.Sprintf("it leaves the feed's origin %s for %s; point the feed at the new URL, or set redirects: follow", from, to))
	}
	st.next, st.viaHops = req.URL, len(via)
	return http.ErrUseLastResponse
}

// call runs one logical request for u through the breaker of u's
// origin. When an attempt stops at a cross-origin redirect the request allows
// (fn returns errFollow), the redirect was that origin's answer (a success
// for its breaker), and the target is asked with a fresh logical call
// through the target origin's breaker: its failures, retries, pacing and
// Retry-After are its own, never charged to the origin that redirected.
func (c *Client) call(ctx context.Context, u *url.URL, follow bool, fn func(ctx context.Context, u *url.URL) breaker.Result) error {
	st := &redirectState{follow: follow}
	ctx = context.WithValue(ctx, redirectKey{}, st)
	for {
		target := u
		st.next = nil
		err := c.do(ctx, breaker.Origin(target), func(actx context.Context, _ int) breaker.Result {
			st.next = nil
			return fn(actx, target)
		})
		if !errors.Is(err, errFollow) || st.next == nil {
			return err
		}
		st.hops += st.viaHops
		u = st.next
		c.logger.Info("following a redirect to another origin", "from", breaker.Origin(target), "to", breaker.Origin(u),
			"url", redact.URL(u.String()))
	}
}

// followed returns the Result of an attempt whose response is a redirect
// that checkRedirect stopped at for call to follow, or nil.
func followed(ctx context.Context, resp *http.Response) *breaker.Result {
	st, _ := ctx.Value(redirectKey{}).(*redirectState)
	if st == nil || st.next == nil || resp.StatusCode < 300 || resp.StatusCode > 399 {
		return nil
	}
	return &breaker.Result{Outcome: breaker.Success, Err: errFollow}
}

// refusedRedirect returns the *RedirectError inside err, if the http.Client
// failed because checkRedirect refused a redirect.
func refusedRedirect(err error) *RedirectError {
	var re *RedirectError
	if errors.As(err, &re) {
		return re
	}
	return nil
}
