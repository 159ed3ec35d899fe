//go:build !airlock_slim

package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// httpProxy: this build serves HTTP proxy requests (http_slim.go).
const httpProxy = true

// hopHeaders are the hop-by-hop headers a proxy does not forward.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Upgrade"}

// serveHTTP serves one HTTP proxy request: CONNECT host:port (the
// tunnel then carries anything, TLS untouched), or an absolute-URI
// http:// request, forwarded with Connection: close (one request per
// connection, so each is judged on its own).
func (p *Proxy) serveHTTP(c net.Conn, br *bufio.Reader, head *capReader) {
	req, err := http.ReadRequest(br)
	if err != nil {
		if errors.Is(err, errHeadTooLong) {
			httpError(c, http.StatusRequestHeaderFieldsTooLarge, "airlock: request head over 64 KiB")
		}
		return
	}
	head.lift()
	c.SetReadDeadline(time.Time{})
	if req.Method == http.MethodConnect {
		host, port, ok := splitHostPort(req.RequestURI)
		if !ok {
			httpError(c, http.StatusBadRequest, "CONNECT wants host:port")
			return
		}
		r, up := p.open("connect", host, port)
		if up == nil {
			httpRefusal(c, r)
			return
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			up.Close()
			r.end("")
			return
		}
		p.relay(r, c, br, up)
		return
	}
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		httpError(c, http.StatusBadRequest, "this is airlock's egress proxy: send absolute http:// URIs, or CONNECT for anything else")
		return
	}
	host, port, ok := splitHostPort(req.URL.Host)
	if !ok {
		host, port, ok = strings.Trim(req.URL.Host, "[]"), 80, req.URL.Port() == ""
	}
	if !ok {
		httpError(c, http.StatusBadRequest, "bad host in the URI")
		return
	}
	r, up := p.open("http", host, port)
	if up == nil {
		httpRefusal(c, r)
		return
	}
	p.forward(r, c, req, up)
}

// forward sends req upstream and its response back, counting bytes,
// under the idle timeout and the byte budget.
func (p *Proxy) forward(r *record, c net.Conn, req *http.Request, up net.Conn) {
	m := &meter{Conn: up, p: p, r: r}
	stop := context.AfterFunc(p.ctx, func() {
		r.end("run ended")
		up.Close()
	})
	defer func() {
		stop()
		up.Close()
		r.end(m.why)
	}()
	for _, h := range hopHeaders {
		req.Header.Del(h)
	}
	req.RequestURI, req.Close = "", true
	if err := req.Write(m); err != nil {
		if m.why == "" {
			m.why = fmt.Sprintf("request: %v", err)
		}
		return
	}
	rhead := &capReader{r: m, left: maxHead}
	resp, err := http.ReadResponse(bufio.NewReader(rhead), req)
	rhead.lift()
	if err != nil {
		if m.why == "" {
			m.why = fmt.Sprintf("response: %v", err)
		}
		httpError(c, http.StatusBadGateway, "no valid response from the server")
		return
	}
	defer resp.Body.Close()
	for _, h := range hopHeaders {
		resp.Header.Del(h)
	}
	resp.Close = true
	c.SetWriteDeadline(time.Now().Add(p.idle))
	resp.Write(&idleWriter{c: c, idle: p.idle})
}

// meter is an upstream connection that counts what passes (Write: up,
// Read: down), charges it to the byte budget and keeps each operation
// within the idle timeout.
type meter struct {
	net.Conn
	p   *Proxy
	r   *record
	why string
}

func (m *meter) charge(n int) error {
	if n > 0 && m.p.budget.Add(-int64(n)) < 0 {
		m.why = "byte limit"
		m.Conn.Close()
		return fmt.Errorf("byte limit")
	}
	return nil
}

func (m *meter) Read(b []byte) (int, error) {
	m.Conn.SetReadDeadline(time.Now().Add(m.p.idle))
	n, err := m.Conn.Read(b)
	m.r.down.Add(int64(n))
	if cerr := m.charge(n); cerr != nil {
		return 0, cerr
	}
	m.timedOut(err)
	return n, err
}

func (m *meter) Write(b []byte) (int, error) {
	if err := m.charge(len(b)); err != nil {
		return 0, err
	}
	m.Conn.SetWriteDeadline(time.Now().Add(m.p.idle))
	n, err := m.Conn.Write(b)
	m.r.up.Add(int64(n))
	m.timedOut(err)
	return n, err
}

func (m *meter) timedOut(err error) {
	if ne, ok := err.(net.Error); ok && ne.Timeout() && m.why == "" {
		m.why = "idle timeout"
	}
}

// idleWriter writes to the sandbox's connection, each write within the
// idle timeout.
type idleWriter struct {
	c    net.Conn
	idle time.Duration
}

func (w *idleWriter) Write(b []byte) (int, error) {
	w.c.SetWriteDeadline(time.Now().Add(w.idle))
	return w.c.Write(b)
}

func httpRefusal(c net.Conn, r *record) {
	e := r.snapshot()
	if e.Denied() {
		httpError(c, http.StatusForbidden, "airlock: "+e.Verdict)
		return
	}
	httpError(c, http.StatusBadGateway, "airlock: "+e.Error)
}

func httpError(c net.Conn, code int, msg string) {
	body := msg + "\n"
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", code, http.StatusText(code), len(body), body)
}
