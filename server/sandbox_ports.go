package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"

	"github.com/airlock-sandbox/airlock/policy"
)

// A sandbox's ports are reached only through the API, under its auth:
// every connection is Sandbox.Dial, a TCP connection to 127.0.0.1:PORT
// (then [::1]:PORT) in the sandbox's own network namespace. Nothing of
// the host's network, nor another sandbox's, is reachable this way: the
// address is fixed, only the port is the client's.

// portOf reads the {port} path value.
func portOf(r *http.Request) (int, error) {
	v := r.PathValue("port")
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 65535 {
		return 0, policy.Invalid("port", "%q is not a TCP port (1 to 65535)", v)
	}
	return n, nil
}

// handlePort serves ANY /v1/sandboxes/{id}/ports/{port}[/{path...}]: with
// "Upgrade: tcp" (GET, no path) a raw TCP tunnel, else an HTTP reverse
// proxy to the port's path.
func (s *Server) handlePort(w http.ResponseWriter, r *http.Request) {
	ls := s.lookupSandbox(w, r)
	if ls == nil {
		return
	}
	port, err := portOf(r)
	if err != nil {
		s.fail(w, 0, err, nil)
		return
	}
	if strings.EqualFold(r.Header.Get("Upgrade"), "tcp") {
		if strings.HasSuffix(r.Pattern, "...}") {
			s.fail(w, 0, policy.Invalid("upgrade", "a TCP tunnel is GET /v1/sandboxes/{id}/ports/{port} with no path"), nil)
			return
		}
		s.tunnel(w, r, ls, port)
		return
	}
	s.proxy(w, r, ls, port)
}

// proxy forwards r to the sandbox's port. Serve's Authorization header
// never reaches the sandbox; the answer carries a sandboxing CSP, so
// that a page the sandbox serves cannot act as the server's own origin
// (a page's requests to the API would otherwise be same-origin ones).
func (s *Server) proxy(w http.ResponseWriter, r *http.Request, ls *liveSandbox, port int) {
	ls.sb.Touch()
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return ls.sb.Dial(ctx, port)
		},
		DisableKeepAlives:  true,
		DisableCompression: true,
	}
	defer tr.CloseIdleConnections()
	rp := &httputil.ReverseProxy{
		Transport: tr,
		Rewrite: func(pr *httputil.ProxyRequest) {
			out := pr.Out
			out.URL.Scheme, out.URL.Host = "http", "127.0.0.1:"+strconv.Itoa(port)
			out.URL.Path, out.URL.RawPath = "/"+pr.In.PathValue("path"), ""
			out.URL.RawQuery = pr.In.URL.RawQuery
			out.Host = "localhost:" + strconv.Itoa(port)
			out.Header.Del("Authorization")
			out.Header.Del("Proxy-Authorization")
		},
		ModifyResponse: func(resp *http.Response) error {
			resp.Header.Set("Content-Security-Policy", "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads")
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return
			}
			status := http.StatusBadGateway
			if errors.Is(err, policy.ErrInvalid) || errors.Is(err, policy.ErrUnavailable) {
				status = s.closedStatus(err)
			}
			s.fail(w, status, portError(port, err), nil)
		},
	}
	rp.ServeHTTP(w, r)
}

// portError says that the port could not be reached, classified: a
// refused connection is the client's to fix (nothing listens there yet:
// retry once it does), as are the library's own refusals.
func portError(port int, err error) error {
	if errors.Is(err, policy.ErrInvalid) || errors.Is(err, policy.ErrUnavailable) || errors.Is(err, policy.ErrUnsupported) {
		return err
	}
	return fmt.Errorf("server: port %d in the sandbox: %v (is a program listening on it, on 127.0.0.1 or [::1] or all addresses?): %w", port, err, policy.ErrUnavailable)
}

// tunnel answers "Upgrade: tcp" with 101 and splices the connection to
// the sandbox's port until either side closes or the sandbox ends.
func (s *Server) tunnel(w http.ResponseWriter, r *http.Request, ls *liveSandbox, port int) {
	if r.Method != http.MethodGet {
		s.fail(w, http.StatusMethodNotAllowed, policy.Invalid("method", "a TCP tunnel is a GET with Upgrade: tcp"), nil)
		return
	}
	if r.ProtoMajor != 1 {
		s.fail(w, 0, policy.Invalid("upgrade", "a TCP tunnel needs HTTP/1.1"), nil)
		return
	}
	up, err := ls.sb.Dial(r.Context(), port)
	if err != nil {
		s.fail(w, http.StatusBadGateway, portError(port, err), nil)
		return
	}
	rc := http.NewResponseController(w)
	conn, brw, err := rc.Hijack()
	if err != nil {
		up.Close()
		s.fail(w, 0, &policy.SetupError{Stage: "tunnel", Err: err}, nil)
		return
	}
	conn.Write([]byte("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n"))
	defer ls.sb.Hold()() // an open tunnel uses the sandbox, however quiet
	var once sync.Once
	closeBoth := func() { once.Do(func() { conn.Close(); up.Close() }) }
	stop := context.AfterFunc(s.kill, closeBoth)
	defer stop()
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-ls.sb.Done():
			closeBoth()
		case <-s.drained:
			closeBoth()
		case <-finished:
		}
	}()
	done := make(chan struct{}, 2)
	go func() {
		// What the client sent after the request, already buffered.
		if n := brw.Reader.Buffered(); n > 0 {
			b, _ := brw.Reader.Peek(n)
			up.Write(b)
		}
		io.Copy(up, touchReader{conn, ls})
		if cw, ok := up.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		io.Copy(conn, touchReader{up, ls})
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	<-done
	<-done
	closeBoth()
}

// touchReader resets the sandbox's idle timer as traffic passes.
type touchReader struct {
	r  io.Reader
	ls *liveSandbox
}

func (t touchReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.ls.sb.Touch()
	}
	return n, err
}
