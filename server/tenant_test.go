package server_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	client "github.com/airlock-sandbox/airlock/clients/go"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/server"
)

const (
	tokA = "alice-0123456789abcdef"
	tokB = "bob-0123456789abcdef00"
)

// tenantsTCP serves e behind two tokens (tenants alice and bob) on a
// loopback TCP listener; it returns the base URL.
func tenantsTCP(t *testing.T, e *env) string {
	t.Helper()
	ts, err := server.ParseTokens(strings.NewReader("# two tenants\nalice " + tokA + "\n\nbob " + tokB + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: server.RequireTokens(ts, e.srv.Handler())}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return "http://" + ln.Addr().String()
}

// answer is a response: status, content type and body.
type answer struct {
	status int
	ctype  string
	body   string
}

func call(t *testing.T, base, tok, method, path, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if method == "POST" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header.Get("Content-Type"), string(b)}
}

// Two tokens are two tenants: each lists only its own session, and
// every route of A's session answers B exactly as an id that does not
// exist does (status, type, body), while A's session is untouched.
func TestTenantsIsolateSessions(t *testing.T) {
	e := start(t, 0, nil)
	base := tenantsTCP(t, e)
	ca, err := client.New(base, tokA)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	cb, err := client.New(base, tokB)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	ctx := t.Context()
	sa, err := ca.NewSession(ctx, client.SessionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := cb.NewSession(ctx, client.SessionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sa.WriteFile(ctx, "secret.txt", []byte("A's")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tok, mine, other, tenant string }{{tokA, sa.ID, sb.ID, "token:alice"}, {tokB, sb.ID, sa.ID, "token:bob"}} {
		l := call(t, base, c.tok, "GET", "/v1/sessions", "")
		if l.status != 200 || !strings.Contains(l.body, c.mine) || strings.Contains(l.body, c.other) || !strings.Contains(l.body, `"tenant":"`+c.tenant+`"`) {
			t.Fatalf("%s's list: %+v, want only %s", c.tenant, l, c.mine)
		}
	}
	routes := []struct{ method, path, body string }{
		{"GET", "/v1/sessions/ID", ""},
		{"POST", "/v1/sessions/ID/exec", `{"language":"sh","code":"echo pwned > secret.txt"}`},
		{"POST", "/v1/sessions/ID/run", `{"argv":["rm","secret.txt"]}`},
		{"GET", "/v1/sessions/ID/files", ""},
		{"GET", "/v1/sessions/ID/files/secret.txt", ""},
		{"PUT", "/v1/sessions/ID/files/secret.txt", "pwned"},
		{"DELETE", "/v1/sessions/ID", ""},
	}
	foreign := map[string]answer{}
	for _, r := range routes {
		a := call(t, base, tokB, r.method, strings.Replace(r.path, "ID", sa.ID, 1), r.body)
		if a.status != 404 {
			t.Fatalf("B's %s %s of A's session: %+v, want 404", r.method, r.path, a)
		}
		foreign[r.method+r.path] = a
	}
	// A's session is untouched: its file, still listed for A.
	if data, err := sa.ReadFile(ctx, "secret.txt"); err != nil || string(data) != "A's" {
		t.Fatalf("A's file after B's attempts: %q %v", data, err)
	}
	if l := call(t, base, tokA, "GET", "/v1/sessions", ""); !strings.Contains(l.body, sa.ID) {
		t.Fatalf("A's session gone from A's list: %+v", l)
	}
	// Once A's id exists no more, B gets the very same answers: B could
	// not tell A's session from no session.
	if err := sa.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		a := call(t, base, tokB, r.method, strings.Replace(r.path, "ID", sa.ID, 1), r.body)
		if f := foreign[r.method+r.path]; a != f {
			t.Errorf("%s %s: another tenant's session %+v, an unknown one %+v: they differ", r.method, r.path, f, a)
		}
	}
	if l := call(t, base, tokB, "GET", "/v1/sessions", ""); !strings.Contains(l.body, sb.ID) {
		t.Fatalf("B's own session: %+v", l)
	}
}

// Past TenantMaxSessions a tenant's next session is refused as the
// server's own cap refuses (429, unavailable, retryable, naming the
// flag) while another tenant still opens one; past TenantMaxConcurrent
// a tenant's next run is refused likewise while another's runs.
func TestTenantLimits(t *testing.T) {
	e := start(t, 0, func(c *server.Config) { c.TenantMaxSessions, c.TenantMaxConcurrent, c.MaxQueue = 1, 1, 4 })
	base := tenantsTCP(t, e)
	if a := call(t, base, tokA, "POST", "/v1/sessions", "{}"); a.status != 201 {
		t.Fatalf("A's first session: %+v", a)
	}
	a := call(t, base, tokA, "POST", "/v1/sessions", "{}")
	info := errorOf(t, []byte(a.body))
	if a.status != 429 || info.Class != policy.ClassUnavailable || !info.Retryable || !strings.Contains(info.Message, "--tenant-max-sessions") {
		t.Fatalf("A's second session: %+v %+v", a, info)
	}
	if a := call(t, base, tokB, "POST", "/v1/sessions", "{}"); a.status != 201 {
		t.Fatalf("B's session beside A's full share: %+v", a)
	}
	if m := e.metric(t, `airlock_rejections_total{reason="tenant_sessions"}`); m != `airlock_rejections_total{reason="tenant_sessions"} 1` {
		t.Fatalf("rejections: %q", m)
	}

	ca, err := client.New(base, tokA)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		ca.Execute(ctx, executor.Request{Args: []string{"sleep", "60"}})
	}()
	if !testutil.WaitFor(10*time.Second, func() bool { return e.metric(t, "airlock_running ") == "airlock_running 1" }) {
		t.Fatal("A's first run never started")
	}
	a = call(t, base, tokA, "POST", "/v1/run", `{"argv":["true"]}`)
	info = errorOf(t, []byte(a.body))
	if a.status != 429 || info.Class != policy.ClassUnavailable || !info.Retryable || !strings.Contains(info.Message, "--tenant-max-concurrent") {
		t.Fatalf("A's second run: %+v %+v", a, info)
	}
	if a := call(t, base, tokB, "POST", "/v1/run", `{"argv":["true"]}`); a.status != 200 || !strings.Contains(a.body, `"status":"ok"`) {
		t.Fatalf("B's run beside A's: %+v", a)
	}
	cancel()
	<-done
}

// A token file: comments, blank lines, names; each malformed line is
// refused naming its number and never its text.
func TestParseTokens(t *testing.T) {
	ts, err := server.ParseTokens(strings.NewReader("# tenants\n\n  alice " + tokA + "  \n" + tokB + "\n\t# last\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ts.Tenants(), ","); got != "token:alice,token:2" {
		t.Fatalf("tenants %q", got)
	}
	for _, c := range []struct{ file, want string }{
		{"# none\n\n", "no token"},
		{"alice " + tokA + "\nbob short\n", "line 2: the token is 5 characters"},
		{"alice " + tokA + " extra\n", "line 1: 3 words"},
		{"# x\nal:ice " + tokA + "\n", "line 2: the name"},
		{"alice " + tokA + "\nbob " + tokA + "\n", "line 2: the same token as line 1"},
		{"alice " + tokA + "\n#\nalice " + tokB + "\n", `line 3: the name "alice" is line 1's too`},
	} {
		_, err := server.ParseTokens(strings.NewReader(c.file))
		if !errors.Is(err, policy.ErrInvalid) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), tokA) {
			t.Errorf("%q: %v, want ErrInvalid naming %q and no token", c.file, err, c.want)
		}
	}
}

// serveUnix serves h on a unix socket of its own (with ConnContext when
// withPeer) and returns a client of it.
func serveUnix(t *testing.T, h http.Handler, withPeer bool) *http.Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "u.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	if withPeer {
		hs.ConnContext = server.ConnContext
	}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	t.Cleanup(hc.CloseIdleConnections)
	return hc
}

func unixCall(t *testing.T, hc *http.Client, method, path, body string, hdr ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://airlock"+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A token over the unix socket names its token's tenant; without one,
// the request is its peer uid's (here this process's own: the peer-uid
// mapping at the function level; cmd/airlock's TestServeUnixPeerTenants
// has two uids) tenant; a wrong token is 401. Served without
// ConnContext, a unix request is refused: the server could not tell two
// local users apart.
func TestTenantOverUnixSocket(t *testing.T) {
	e := start(t, 0, nil)
	ts, err := server.ParseTokens(strings.NewReader("alice " + tokA + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	hc := serveUnix(t, server.AcceptTokens(ts, e.srv.Handler()), true)
	code, b := unixCall(t, hc, "POST", "/v1/sessions", "{}", "Authorization", "Bearer "+tokA)
	if code != 201 || !strings.Contains(b, `"tenant":"token:alice"`) {
		t.Fatalf("with a token: %d %s", code, b)
	}
	code, b = unixCall(t, hc, "POST", "/v1/sessions", "{}")
	if want := `"tenant":"uid:` + strconv.Itoa(os.Getuid()) + `"`; code != 201 || !strings.Contains(b, want) {
		t.Fatalf("without a token: %d %s, want %s", code, b, want)
	}
	code, b = unixCall(t, hc, "GET", "/v1/sessions", "")
	if code != 200 || strings.Count(b, `"id"`) != 1 || strings.Contains(b, "token:alice") {
		t.Fatalf("the uid's list: %d %s", code, b)
	}
	if code, b = unixCall(t, hc, "GET", "/v1/sessions", "", "Authorization", "Bearer wrong-0123456789abcdef"); code != 401 {
		t.Fatalf("a wrong token: %d %s", code, b)
	}
	bare := serveUnix(t, e.srv.Handler(), false)
	if code, b = unixCall(t, bare, "POST", "/v1/sessions", "{}"); code != 500 || !strings.Contains(b, "ConnContext") {
		t.Fatalf("without ConnContext: %d %s", code, b)
	}
	if code, b = unixCall(t, hc, "GET", "/v1/sessions", ""); strings.Count(b, `"id"`) != 1 {
		t.Fatalf("a session was made without ConnContext: %d %s", code, b)
	}
}
