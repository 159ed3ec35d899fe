package server

import (
	"context"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/airlock-sandbox/airlock/policy"
)

// A listener on loopback is reached by every program of this machine,
// the user's web browser included, which sends requests for any page it
// shows. Two shapes of request let a page on another site use a server
// that asks for no token (docs/serve.md, "A loopback listener and web
// pages"):
//
//   - DNS rebinding: the page's own name is made to resolve to 127.0.0.1,
//     so that the browser treats the server as the page's origin and
//     lets the page read its answers. The request's Host is the page's
//     name, not a loopback one.
//   - A cross-site "simple" request (a form, or fetch in no-cors mode): a
//     POST with a text/plain, form or multipart body (or none), which the
//     browser sends without asking the server first. It carries the
//     page's Origin (every browser of today sends one on a POST; an old
//     one may not, which is why the body's type is checked too).
//
// LoopbackGuard refuses both; a request that passed RequireToken skips
// it: a browser never adds a bearer token of its own, and a page that has
// one was given it.

// authenticated marks a request's context once RequireToken passed it.
type authenticated struct{}

// LoopbackGuard wraps h: a request that came in over a loopback TCP
// connection, and did not pass RequireToken, is refused (and runs
// nothing) unless
//
//   - its Host is a loopback name: localhost, a name under .localhost, an
//     address in 127.0.0.0/8 or [::1], with or without a port (403
//     otherwise);
//   - it has no Origin header, or a loopback one: http or https and a
//     loopback host ("null" is foreign) (403 otherwise);
//   - a POST says Content-Type: application/json, and another method
//     that has a body does not say text/plain,
//     application/x-www-form-urlencoded or multipart/form-data (415
//     otherwise).
//
// A request over a unix socket, over TCP to an address that is not
// loopback, or without a connection (httptest.NewRecorder) is passed on
// unchecked. Handler and Metrics are wrapped in it already; a front end
// that serves other routes (airlock mcp) wraps its own.
func LoopbackGuard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(authenticated{}) == nil && overLoopback(r) {
			if status, info := checkLocal(r); info != nil {
				refuse(w, r, status, info)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// trusted marks r as having passed RequireTokens with tenant's token.
func trusted(r *http.Request, tenant string) *http.Request {
	ctx := context.WithValue(r.Context(), authenticated{}, true)
	return r.WithContext(context.WithValue(ctx, tenantKey{}, tenant))
}

// overLoopback reports whether r came in over a TCP connection to a
// loopback address (a listener on 0.0.0.0 included, when the client
// connected to 127.0.0.1).
func overLoopback(r *http.Request) bool {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	return ok && a.AddrPort().Addr().Unmap().IsLoopback()
}

// guardFix is the way out of every refusal.
const guardFix = "or give the server a token (airlock serve --token-file) and send it as Authorization: Bearer <token>"

// refusal is a guard's refusal: its status and what it says.
func refusal(status int, field, fix, format string, args ...any) (int, *policy.ErrorInfo) {
	info := policy.Describe(policy.Invalid(field, format, args...))
	info.Fix = fix + ", " + guardFix
	return status, info
}

// checkLocal checks r's Host, Origin and Content-Type: nil, or the
// refusal and its status.
func checkLocal(r *http.Request) (int, *policy.ErrorInfo) {
	if !loopbackHost(r.Host) {
		return refusal(http.StatusForbidden, "host", "connect to http://127.0.0.1:PORT or http://localhost:PORT",
			"Host %q is not a loopback name: a listener without a token answers only localhost, *.localhost, 127.0.0.0/8 and [::1] (a web page that makes its own name resolve to 127.0.0.1, DNS rebinding, sends its own name)", r.Host)
	}
	if vs, ok := r.Header["Origin"]; ok && (len(vs) != 1 || !loopbackOrigin(vs[0])) {
		return refusal(http.StatusForbidden, "origin", "send no Origin header (a program need not send one)",
			"Origin %q is not a loopback origin: a listener without a token refuses what a web page of another site sends", strings.Join(vs, ", "))
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
		return 0, nil
	}
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(ct))
	}
	said := fmt.Sprintf("Content-Type %q", ct)
	if ct == "" {
		said = "no Content-Type"
	}
	switch {
	case r.Method == http.MethodPost && mt != "application/json":
		return refusal(http.StatusUnsupportedMediaType, "content-type", "send Content-Type: application/json (the body is JSON already)",
			"%s on POST %s: a listener without a token takes a POST only as application/json (a web page of any site can send a text/plain, form or multipart body, or one of no type, without asking first)", said, r.URL.Path)
	case mt == "text/plain" || mt == "application/x-www-form-urlencoded" || mt == "multipart/form-data":
		return refusal(http.StatusUnsupportedMediaType, "content-type", "send Content-Type: application/octet-stream, or none",
			"%s on %s %s: a listener without a token refuses the types a web page can send without asking first", said, r.Method, r.URL.Path)
	}
	return 0, nil
}

// refuse writes a guard's refusal: {"error": ErrorInfo}, as every error;
// on Piston's routes, Piston's shape ({message}, the rest beside it).
func refuse(w http.ResponseWriter, r *http.Request, status int, info *policy.ErrorInfo) {
	if strings.HasPrefix(r.URL.Path, "/api/v2/") {
		writeJSON(w, status, info)
		return
	}
	writeJSON(w, status, errorBody{Error: info})
}

// loopbackHost reports whether host (a Host header, or an origin's host;
// with or without a port) names this machine's loopback: localhost or a
// name under .localhost (reserved for loopback by RFC 6761; Chrome and
// Firefox resolve them so themselves, never through DNS, so a page cannot
// rebind them), an
// address in 127.0.0.0/8, or ::1 (an address names no DNS record to
// rebind).
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap().IsLoopback()
	}
	host = strings.ToLower(host)
	if host == "localhost" {
		return true
	}
	sub, ok := strings.CutSuffix(host, ".localhost")
	if !ok || sub == "" {
		return false
	}
	for _, label := range strings.Split(sub, ".") {
		if label == "" {
			return false
		}
	}
	return true
}

// loopbackOrigin reports whether an Origin header is scheme://host[:port]
// with an http or https scheme and a loopback host.
func loopbackOrigin(o string) bool {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.Opaque != "" ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Host == "" {
		return false
	}
	return loopbackHost(u.Host)
}
