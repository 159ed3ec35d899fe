//go:build airlock_slim

package egress

import (
	"bufio"
	"fmt"
	"net"
)

// The CLI that scripts/build makes (tag airlock_slim) leaves out the HTTP
// proxy, and with it net/http and crypto/tls, whose package
// initialization every `airlock run` would pay: New refuses, and the CLI
// runs airlock-daemon for a policy with --net allow.

// httpProxy: this build has no HTTP proxy (New refuses).
const httpProxy = false

// serveHTTP is never reached: New refuses in this build.
func (p *Proxy) serveHTTP(c net.Conn, _ *bufio.Reader, _ *capReader) {
	httpError(c, 502, "airlock: this build has no HTTP proxy")
}

func httpError(c net.Conn, code int, msg string) {
	body := msg + "\n"
	fmt.Fprintf(c, "HTTP/1.1 %d Refused\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", code, len(body), body)
	c.Close()
}
