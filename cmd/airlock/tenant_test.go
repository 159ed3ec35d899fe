//go:build !airlock_slim

package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

const (
	tenantTokA = "alice-0123456789abcdef"
	tenantTokB = "bob-0123456789abcdef00"
)

// A token file of several named tenants, with comments, serves each
// tenant its own sessions over TCP, with --tenant-max-sessions per
// tenant; a malformed file is refused at start naming its line (never
// the token).
func TestServeTokenFileTenants(t *testing.T) {
	dir := serveDir(t)
	tok := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tok, []byte("# tenants of this server\n\nalice "+tenantTokA+"\n  # bob next\nbob "+tenantTokB+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad-tokens")
	if err := os.WriteFile(bad, []byte("# ok\nalice "+tenantTokA+"\nbob short-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	code := serveCmd([]string{"--listen", "tcp:127.0.0.1:0", "--token-file", bad, "--work-dir", filepath.Join(dir, "w")}, io.Discard, &stderr)
	if code != exitSetup || !strings.Contains(stderr.String(), "line 3") || !strings.Contains(stderr.String(), "--token-file") || strings.Contains(stderr.String(), "short-secret") {
		t.Fatalf("a malformed token file: exit %d %q; want %d naming line 3, and no token", code, stderr.String(), exitSetup)
	}

	s := serve(t, dir, "--listen", "tcp:127.0.0.1:0", "--token-file", tok, "--tenant-max-sessions", "1", "--pool", "0")
	addr := s.tcpAddr(t)
	do := func(tok, method, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, b := do(tenantTokA, "POST", "/v1/sessions")
	var sa struct{ ID, Tenant string }
	if code != 201 || json.Unmarshal([]byte(b), &sa) != nil || sa.Tenant != "token:alice" {
		t.Fatalf("alice's session: %d %s", code, b)
	}
	if code, b := do(tenantTokA, "POST", "/v1/sessions"); code != 429 || !strings.Contains(b, `"class":"unavailable","retryable":true`) || !strings.Contains(b, "--tenant-max-sessions") {
		t.Fatalf("alice's second session: %d %s", code, b)
	}
	if code, b := do(tenantTokB, "POST", "/v1/sessions"); code != 201 || !strings.Contains(b, `"tenant":"token:bob"`) {
		t.Fatalf("bob's session: %d %s", code, b)
	}
	if code, b := do(tenantTokB, "GET", "/v1/sessions/"+sa.ID); code != 404 {
		t.Fatalf("bob's get of alice's session: %d %s", code, b)
	}
	if code, b := do(tenantTokB, "DELETE", "/v1/sessions/"+sa.ID); code != 404 {
		t.Fatalf("bob's delete of alice's session: %d %s", code, b)
	}
	if code, b := do(tenantTokA, "GET", "/v1/sessions"); code != 200 || !strings.Contains(b, sa.ID) || strings.Contains(b, "token:bob") {
		t.Fatalf("alice's list: %d %s", code, b)
	}
	// Over the unix socket, alice's token is alice; no token is the
	// peer's uid, another tenant.
	uc := s.unixClient()
	defer uc.CloseIdleConnections()
	for _, c := range []struct {
		tok  string
		sees bool
	}{{tenantTokA, true}, {"", false}} {
		req, _ := http.NewRequest("GET", "http://airlock/v1/sessions", nil)
		if c.tok != "" {
			req.Header.Set("Authorization", "Bearer "+c.tok)
		}
		resp, err := uc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.Contains(string(b), sa.ID) != c.sees {
			t.Fatalf("over the unix socket, token %q: %d %s; want alice's session listed: %v", c.tok, resp.StatusCode, b, c.sees)
		}
	}
	if strings.Contains(s.stderr.String(), tenantTokA) || strings.Contains(s.stderr.String(), tenantTokB) {
		t.Fatalf("a token in the log:\n%s", s.stderr)
	}
	if !strings.Contains(s.stderr.String(), "tenant=token:alice") {
		t.Fatalf("the log does not name the tenant:\n%s", s.stderr)
	}
}

// Over a unix socket shared with a group (--socket-group), two local
// users are two tenants: root's session is not in nobody's list, and
// nobody's get, exec, file read and write and delete of it answer what
// an unknown id does; root's session is untouched. The requests of
// nobody are curl's, run as uid 65534.
func TestServeUnixPeerTenants(t *testing.T) {
	testutil.RequireRoot(t)
	curl := testutil.RequireBinary(t, "curl")
	setpriv := testutil.RequireBinary(t, "setpriv")
	dir := serveDir(t)
	s := serve(t, dir, "--socket-group", "65534", "--pool", "0")
	fi, err := os.Stat(s.sock)
	if err != nil || fi.Mode().Perm() != 0o660 || fi.Sys().(*syscall.Stat_t).Gid != 65534 {
		t.Fatalf("socket: %v %v", fi.Mode(), err)
	}
	uc := s.unixClient()
	defer uc.CloseIdleConnections()
	asRoot := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://airlock"+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := uc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	asNobody := func(method, path, body string) string {
		t.Helper()
		cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--",
			curl, "-sS", "--unix-socket", s.sock, "-X", method, "-H", "Content-Type: application/json",
			"--data-binary", body, "-w", "\n%{http_code}", "http://airlock"+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("curl as nobody: %v %s", err, out)
		}
		return string(out)
	}
	code, b := asRoot("POST", "/v1/sessions", "{}")
	var sr struct{ ID, Tenant string }
	if code != 201 || json.Unmarshal([]byte(b), &sr) != nil || sr.Tenant != "uid:0" {
		t.Fatalf("root's session: %d %s", code, b)
	}
	if code, b := asRoot("PUT", "/v1/sessions/"+sr.ID+"/files/mine.txt", "root's"); code != 204 {
		t.Fatalf("root's upload: %d %s", code, b)
	}
	if got := asNobody("POST", "/v1/sessions", "{}"); !strings.Contains(got, `"tenant":"uid:65534"`) || !strings.HasSuffix(got, "\n201") {
		t.Fatalf("nobody's session: %s", got)
	}
	if got := asNobody("GET", "/v1/sessions", ""); strings.Contains(got, sr.ID) || !strings.HasSuffix(got, "\n200") {
		t.Fatalf("nobody's list: %s", got)
	}
	routes := []struct{ method, path, body string }{
		{"GET", "/v1/sessions/ID", ""},
		{"POST", "/v1/sessions/ID/exec", `{"language":"sh","code":"rm mine.txt"}`},
		{"GET", "/v1/sessions/ID/files/mine.txt", ""},
		{"PUT", "/v1/sessions/ID/files/mine.txt", "nobody's"},
		{"DELETE", "/v1/sessions/ID", ""},
	}
	foreign := map[string]string{}
	for _, r := range routes {
		got := asNobody(r.method, strings.Replace(r.path, "ID", sr.ID, 1), r.body)
		if !strings.HasSuffix(got, "\n404") {
			t.Fatalf("nobody's %s %s of root's session: %s", r.method, r.path, got)
		}
		foreign[r.method+r.path] = got
	}
	if code, b := asRoot("GET", "/v1/sessions/"+sr.ID+"/files/mine.txt", ""); code != 200 || b != "root's" {
		t.Fatalf("root's file after nobody's attempts: %d %q", code, b)
	}
	if code, b := asRoot("GET", "/v1/sessions", ""); code != 200 || !strings.Contains(b, sr.ID) || strings.Contains(b, "uid:65534") {
		t.Fatalf("root's list: %d %s", code, b)
	}
	if code, b := asRoot("DELETE", "/v1/sessions/"+sr.ID, ""); code != 204 {
		t.Fatalf("root's delete: %d %s", code, b)
	}
	for _, r := range routes {
		if got := asNobody(r.method, strings.Replace(r.path, "ID", sr.ID, 1), r.body); got != foreign[r.method+r.path] {
			t.Errorf("%s %s: root's session %q, no session %q: they differ", r.method, r.path, foreign[r.method+r.path], got)
		}
	}
}
