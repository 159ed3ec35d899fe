package e2b

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
)

// serveProxy forwards r to port inside s (Sandbox.Dial: the sandbox's
// own loopback), as an HTTP reverse proxy (upgrades, WebSocket
// included). The sandbox's tokens and E2B's routing headers are not
// forwarded.
func (h *Handler) serveProxy(w http.ResponseWriter, r *http.Request, s *sandbox, port int) {
	if s.box.State() == "paused" {
		fail(w, http.StatusBadGateway, "sandbox %q is paused: resume it (connect) to reach its port %d", s.id, port)
		return
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return s.box.Dial(ctx, port)
		},
		DisableKeepAlives: true,
	}
	defer tr.CloseIdleConnections()
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = "127.0.0.1:" + strconv.Itoa(port)
			pr.Out.Host = r.Host
			for _, k := range []string{"X-Access-Token", "E2B-Traffic-Access-Token", "E2b-Sandbox-Id", "E2b-Sandbox-Port"} {
				pr.Out.Header.Del(k)
			}
			pr.SetXForwarded()
		},
		Transport: tr,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			fail(w, http.StatusBadGateway, "sandbox %q, port %d: %v (is a server listening on it, on 127.0.0.1 or ::1?)", s.id, port, err)
		},
	}
	rp.ServeHTTP(w, r)
}
