package server_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	client "github.com/airlock-sandbox/airlock/clients/go"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/server"
)

// serveTCP serves h on a TCP listener on 127.0.0.1 (as airlock serve
// --listen tcp:127.0.0.1:PORT) and returns its host:port.
func serveTCP(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

// doTCP sends a raw request to addr; hdr are name, value pairs ("Host"
// sets the Host header, a repeated name adds a value).
func doTCP(t *testing.T, addr, method, path, body string, hdr ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// sessionFiles lists a session's workspace over the TCP listener addr
// (its tenant, LocalTenant, owns the session).
func sessionFiles(t *testing.T, addr, id string) []string {
	t.Helper()
	code, b := doTCP(t, addr, "GET", "/v1/sessions/"+id+"/files", "")
	var out []server.FileEntry
	if code != 200 || json.Unmarshal(b, &out) != nil {
		t.Fatalf("files: %d %s", code, b)
	}
	var names []string
	for _, f := range out {
		names = append(names, f.Path)
	}
	slices.Sort(names)
	return names
}

// A TCP listener on loopback without a token refuses what a web page of
// another site can make a browser send: a foreign Host (DNS rebinding),
// a foreign Origin, a POST whose body is not JSON (a cross-site simple
// request). Nothing of it runs: the runs counter stays empty, a session
// keeps its one file and nobody else's is read, no session is made or
// closed; each of those moves once the same requests come as a program
// on this host sends them. The unix socket checks none of it.
func TestLoopbackGuard(t *testing.T) {
	e := start(t, 0, nil)
	addr := serveTCP(t, e.srv.Handler())
	_, port, _ := net.SplitHostPort(addr)
	// Made over the TCP listener: the tenant of a loopback request
	// without a token (a unix socket peer is another tenant).
	code, b := doTCP(t, addr, "POST", "/v1/sessions", `{}`, "Content-Type", "application/json")
	var sess struct {
		ID string `json:"id"`
	}
	if code != 201 || json.Unmarshal(b, &sess) != nil || sess.ID == "" {
		t.Fatalf("session: %d %s", code, b)
	}
	if code, b := doTCP(t, addr, "PUT", "/v1/sessions/"+sess.ID+"/files/secret", "s3cret"); code/100 != 2 {
		t.Fatalf("upload: %d %s", code, b)
	}
	sp := "/v1/sessions/" + sess.ID
	const ctJSON = "application/json"
	exec := `{"language":"sh","code":"echo ran > /workspace/pwned"}`
	piston := `{"language":"bash","version":"*","files":[{"content":"echo ran > pwned"}]}`
	cases := []struct {
		name, method, path, body string
		hdr                      []string
		status                   int
		field                    string
	}{
		{"foreign Host", "POST", "/v1/exec", exec, []string{"Host", "attacker.example", "Content-Type", ctJSON}, 403, "host"},
		{"foreign Host and port", "POST", "/v1/exec", exec, []string{"Host", "attacker.example:" + port, "Content-Type", ctJSON}, 403, "host"},
		{"foreign Host, Piston", "POST", "/api/v2/execute", piston, []string{"Host", "attacker.example:" + port, "Content-Type", ctJSON}, 403, "host"},
		{"foreign Host, session exec", "POST", sp + "/exec", exec, []string{"Host", "attacker.example", "Content-Type", ctJSON}, 403, "host"},
		{"foreign Host, session list", "GET", "/v1/sessions", "", []string{"Host", "attacker.example:" + port}, 403, "host"},
		{"foreign Host, a session's file", "GET", sp + "/files/secret", "", []string{"Host", "attacker.example"}, 403, "host"},
		{"foreign Host, new session", "POST", "/v1/sessions", `{}`, []string{"Host", "attacker.example", "Content-Type", ctJSON}, 403, "host"},
		{"foreign Host, session close", "DELETE", sp, "", []string{"Host", "attacker.example"}, 403, "host"},
		{"a name ending in localhost", "POST", "/v1/exec", exec, []string{"Host", "evillocalhost", "Content-Type", ctJSON}, 403, "host"},
		{"foreign Origin", "POST", "/v1/exec", exec, []string{"Origin", "http://attacker.example", "Content-Type", ctJSON}, 403, "origin"},
		{"Origin null", "POST", "/v1/exec", exec, []string{"Origin", "null", "Content-Type", ctJSON}, 403, "origin"},
		{"foreign Origin under a loopback name", "POST", "/v1/exec", exec, []string{"Origin", "http://localhost.attacker.example", "Content-Type", ctJSON}, 403, "origin"},
		{"foreign Origin, Piston", "POST", "/api/v2/execute", piston, []string{"Origin", "https://attacker.example", "Content-Type", ctJSON}, 403, "origin"},
		{"foreign Origin, a session's file", "GET", sp + "/files/secret", "", []string{"Origin", "https://attacker.example"}, 403, "origin"},
		{"two Origins", "POST", "/v1/exec", exec, []string{"Origin", "http://localhost", "Origin", "http://attacker.example", "Content-Type", ctJSON}, 403, "origin"},
		{"text/plain", "POST", "/v1/exec", exec, []string{"Content-Type", "text/plain;charset=UTF-8"}, 415, "content-type"},
		{"a form", "POST", "/v1/exec", exec, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "content-type"},
		{"multipart", "POST", "/v1/exec", exec, []string{"Content-Type", "multipart/form-data; boundary=x"}, 415, "content-type"},
		{"no type", "POST", "/v1/exec", exec, nil, 415, "content-type"},
		{"text/plain, Piston", "POST", "/api/v2/execute", piston, []string{"Content-Type", "text/plain;charset=UTF-8"}, 415, "content-type"},
		{"text/plain, session exec", "POST", sp + "/exec", exec, []string{"Content-Type", "text/plain"}, 415, "content-type"},
		{"text/plain, new session", "POST", "/v1/sessions", `{}`, []string{"Content-Type", "text/plain"}, 415, "content-type"},
		{"text/plain, upload", "PUT", sp + "/files/pwned", "ran", []string{"Content-Type", "text/plain"}, 415, "content-type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, b := doTCP(t, addr, c.method, c.path, c.body, c.hdr...)
			if code != c.status {
				t.Fatalf("%d, want %d: %s", code, c.status, b)
			}
			var info policy.ErrorInfo
			if strings.HasPrefix(c.path, "/api/v2/") {
				// Piston's shape: {message}, airlock's fields beside it.
				json.Unmarshal(b, &info)
			} else {
				info = errorOf(t, b)
			}
			if info.Class != policy.ClassInvalid || info.Retryable || info.Field != c.field ||
				!strings.Contains(strings.ToLower(info.Message), c.field) || !strings.Contains(info.Fix, "--token-file") {
				t.Fatalf("%+v, want class invalid, field %s, not retryable, a message naming the header and a fix naming the token", info, c.field)
			}
		})
	}
	if m := e.metric(t, "airlock_runs_total"); m != "" {
		t.Fatalf("a refused request ran: %s", m)
	}
	if got := sessionFiles(t, addr, sess.ID); !slices.Equal(got, []string{"secret"}) {
		t.Fatalf("the session's workspace after the refusals: %v, want only secret", got)
	}
	if m := e.metric(t, "airlock_sessions"); m != "airlock_sessions 1" {
		t.Fatalf("sessions: %q, want the one", m)
	}

	// As a program on this host sends them, the same requests run.
	for _, c := range []struct {
		name, method, path, body string
		hdr                      []string
		status                   int
		want                     string
	}{
		{"exec", "POST", "/v1/exec", exec, []string{"Content-Type", ctJSON}, 200, `"status":"ok"`},
		{"Piston, localhost, a loopback Origin", "POST", "/api/v2/execute", piston, []string{"Host", "localhost:" + port, "Origin", "http://localhost:3000", "Content-Type", ctJSON}, 200, `"code":0`},
		{"session exec, [::1], JSON with a charset", "POST", sp + "/exec", exec, []string{"Host", "[::1]:" + port, "Content-Type", "application/json; charset=utf-8"}, 200, `"status":"ok"`},
		{"session list, a name under .localhost", "GET", "/v1/sessions", "", []string{"Host", "sandbox-1.localhost:" + port}, 200, sess.ID},
		{"a session's file, 127.0.0.2", "GET", sp + "/files/secret", "", []string{"Host", "127.0.0.2"}, 200, "s3cret"},
		{"upload, no type", "PUT", sp + "/files/up", "data", nil, 204, ""},
	} {
		code, b := doTCP(t, addr, c.method, c.path, c.body, c.hdr...)
		if code != c.status || !strings.Contains(string(b), c.want) {
			t.Fatalf("%s: %d %s, want %d with %s", c.name, code, b, c.status, c.want)
		}
	}
	if m := e.metric(t, "airlock_runs_total"); !strings.Contains(m, `kind="exec",status="ok"} 1`) || !strings.Contains(m, `kind="piston",status="ok"} 1`) || !strings.Contains(m, `kind="session",status="ok"} 1`) {
		t.Fatalf("runs: %s, want one exec, one piston, one session run", m)
	}
	// The session exec's code was written outside /workspace (a live
	// session's): not among its files.
	if got := sessionFiles(t, addr, sess.ID); !slices.Equal(got, []string{"pwned", "secret", "up"}) {
		t.Fatalf("the session's workspace: %v", got)
	}

	// The Go client over TCP sends what the listener takes: a session
	// made, written, run in, read and closed.
	gc, err := client.New("http://"+addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	gs, err := gc.NewSession(t.Context(), client.SessionConfig{})
	if err != nil {
		t.Fatalf("the Go client's session over TCP: %v", err)
	}
	if err := gs.WriteFile(t.Context(), "in", []byte("go")); err != nil {
		t.Fatal(err)
	}
	if res, err := gs.Execute(t.Context(), executor.Request{Language: "sh", Code: "cat in > out"}); err != nil || res.Status != "ok" {
		t.Fatalf("the Go client's session exec over TCP: %v %+v", err, res)
	}
	if b, err := gs.ReadFile(t.Context(), "out"); err != nil || string(b) != "go" {
		t.Fatalf("the Go client's download over TCP: %q %v", b, err)
	}
	if err := gs.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	// The unix socket checks nothing of it: no browser reaches it.
	code, _, b = e.do(t, "POST", "/v1/exec", exec, "Host", "attacker.example", "Origin", "null", "Content-Type", "text/plain")
	if code != 200 || !strings.Contains(string(b), `"status":"ok"`) {
		t.Fatalf("over the unix socket: %d %s", code, b)
	}
}

// Which Host and Origin values a tokenless loopback listener takes.
func TestLoopbackGuardNames(t *testing.T) {
	e := start(t, 0, nil)
	addr := serveTCP(t, e.srv.Handler())
	for host, ok := range map[string]bool{
		"localhost": true, "LocalHost:8080": true, "127.0.0.1": true, "127.1.2.3:80": true, "[::1]": true, "[::1]:8080": true,
		"[::ffff:127.0.0.1]:1": true, "a.localhost": true, "49152-abc.localhost:8080": true, "A.B.LOCALHOST": true,
		"attacker.example": false, "localhost.attacker.example": false, "127.0.0.1.nip.io": false, "evillocalhost": false,
		"localhost.": false, ".localhost": false, "a..localhost": false, "0.0.0.0": false, "[::]:80": false, "10.0.0.1": false,
		"[fe80::1]": false,
	} {
		code, b := doTCP(t, addr, "GET", "/healthz", "", "Host", host)
		if ok && code != 200 || !ok && code != 403 {
			t.Errorf("Host %q: %d %s, want %v", host, code, b, map[bool]int{true: 200, false: 403}[ok])
		}
	}
	for origin, ok := range map[string]bool{
		"http://localhost:3000": true, "https://127.0.0.1": true, "http://[::1]:8080": true, "http://app.localhost": true,
		"null": false, "": false, "http://attacker.example": false, "file://": false, "http://localhost:3000/path": false,
		"chrome-extension://abcdef": false, "ws://localhost": false, "http://user@localhost": false, "localhost": false,
	} {
		code, b := doTCP(t, addr, "GET", "/healthz", "", "Origin", origin)
		if ok && code != 200 || !ok && code != 403 {
			t.Errorf("Origin %q: %d %s, want %v", origin, code, b, map[bool]int{true: 200, false: 403}[ok])
		}
	}
}

// With a token the checks are not made on a request that carries it (a
// browser never adds a bearer token by itself: a page that sends one was
// given it), so a client may name the server as it likes (a reverse
// proxy's name, another host's); without the token, or with a wrong one,
// the request is refused whatever its headers.
func TestLoopbackGuardWithToken(t *testing.T) {
	e := start(t, 0, nil)
	const tok = "0123456789abcdef-token"
	h, err := server.RequireToken(tok, e.srv.Handler())
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTCP(t, h)
	exec := `{"language":"sh","code":"echo ran"}`
	foreign := []string{"Host", "attacker.example", "Origin", "http://attacker.example", "Content-Type", "text/plain"}
	for _, c := range []struct {
		auth   string
		status int
	}{{"", 401}, {"Bearer wrong", 401}, {"bearer " + tok, 200}} {
		hdr := slices.Clone(foreign)
		if c.auth != "" {
			hdr = append(hdr, "Authorization", c.auth)
		}
		if code, b := doTCP(t, addr, "POST", "/v1/exec", exec, hdr...); code != c.status {
			t.Fatalf("auth %q: %d %s, want %d", c.auth, code, b, c.status)
		}
	}
	if m := e.metric(t, "airlock_runs_total"); m != `airlock_runs_total{kind="exec",status="ok"} 1` {
		t.Fatalf("runs: %q, want the one with the token", m)
	}
	// /healthz asks for no token, and without one it is checked as on a
	// listener without a token.
	if code, b := doTCP(t, addr, "GET", "/healthz", "", "Host", "attacker.example"); code != 403 {
		t.Fatalf("/healthz, foreign Host, no token: %d %s", code, b)
	}
	if code, b := doTCP(t, addr, "GET", "/healthz", ""); code != 200 {
		t.Fatalf("/healthz: %d %s", code, b)
	}
}
