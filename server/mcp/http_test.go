package mcp_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/server"
)

// MCP over HTTP on loopback without a token makes airlock serve's checks
// (server.LoopbackGuard, the one implementation): a tools/call with a
// foreign Host, a foreign Origin or a text/plain body is refused and
// runs nothing (the server's runs counter stays empty), the same call as
// a local client sends it runs; behind the token, the foreign Host is
// let through as airlock serve lets it.
func TestHTTPLoopbackGuard(t *testing.T) {
	e := start(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const tok = "0123456789abcdef-token"
	mux := http.NewServeMux()
	mux.Handle("/", e.m.Handler())
	withToken, err := server.RequireToken(tok, e.m.Handler())
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/token/", http.StripPrefix("/token", withToken))
	hs := &http.Server{Handler: mux}
	go hs.Serve(ln)
	defer hs.Close()
	url := "http://" + ln.Addr().String()
	post := func(path, body string, hdr ...string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", url+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for i := 0; i+1 < len(hdr); i += 2 {
			if hdr[i] == "Host" {
				req.Host = hdr[i+1]
			} else {
				req.Header.Set(hdr[i], hdr[i+1])
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	runs := func() string {
		w := httptest.NewRecorder()
		e.srv.Metrics().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		var out []string
		for _, l := range strings.Split(w.Body.String(), "\n") {
			if strings.HasPrefix(l, "airlock_runs_total") {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	const initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	const call = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_code","arguments":{"language":"sh","code":"echo ran"}}}`
	session := func(prefix string, hdr ...string) string {
		t.Helper()
		code, h, b := post(prefix+"/", initialize, hdr...)
		id := h.Get("Mcp-Session-Id")
		if code != 200 || id == "" {
			t.Fatalf("initialize: %d %s", code, b)
		}
		if code, _, b := post(prefix+"/", initialized, append(hdr, "Mcp-Session-Id", id)...); code/100 != 2 {
			t.Fatalf("initialized: %d %s", code, b)
		}
		return id
	}
	if code, _, b := post("/", initialize, "Host", "attacker.example"); code != 403 || !strings.Contains(b, `"field":"host"`) {
		t.Fatalf("initialize with a foreign Host: %d %s", code, b)
	}
	id := session("")
	for _, c := range []struct {
		name   string
		hdr    []string
		status int
		field  string
	}{
		{"foreign Host", []string{"Host", "attacker.example"}, 403, "host"},
		{"foreign Origin", []string{"Origin", "http://attacker.example"}, 403, "origin"},
		{"text/plain", []string{"Content-Type", "text/plain"}, 415, "content-type"},
	} {
		code, _, b := post("/", call, append(c.hdr, "Mcp-Session-Id", id)...)
		if code != c.status || !strings.Contains(b, `"field":"`+c.field+`"`) {
			t.Errorf("%s: %d %s, want %d naming %s", c.name, code, b, c.status, c.field)
		}
	}
	if m := runs(); m != "" {
		t.Fatalf("a refused call ran: %s", m)
	}
	if code, _, b := post("/", call, "Mcp-Session-Id", id, "Host", "localhost", "Origin", "http://127.0.0.1:6274"); code != 200 || !strings.Contains(b, `ran\n`) {
		t.Fatalf("the call from a local client: %d %s", code, b)
	}
	if m := runs(); m != `airlock_runs_total{kind="exec",status="ok"} 1` {
		t.Fatalf("runs: %q, want the local client's one", m)
	}
	// Behind the token: the foreign Host with the token runs, without it
	// is refused.
	if code, _, b := post("/token/", initialize, "Host", "attacker.example"); code != 401 {
		t.Fatalf("initialize without the token: %d %s", code, b)
	}
	id = session("/token", "Host", "mcp.example", "Authorization", "bearer "+tok)
	if code, _, b := post("/token/", call, "Mcp-Session-Id", id, "Host", "mcp.example", "Authorization", "Bearer "+tok); code != 200 || !strings.Contains(b, `ran\n`) {
		t.Fatalf("the call with the token: %d %s", code, b)
	}
	if m := runs(); m != `airlock_runs_total{kind="exec",status="ok"} 2` {
		t.Fatalf("runs: %q, want 2", m)
	}
}
