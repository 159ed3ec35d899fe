package server_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/server"
)

// sessionResult is a session run's response.
type sessionResult struct {
	Status       string `json:"status"`
	ExitCode     int    `json:"exit_code"`
	Stdout       string `json:"stdout"`
	Stderr       string `json:"stderr"`
	PID          int    `json:"pid"`
	FilesTotal   *int   `json:"files_total"`
	FilesOmitted *int   `json:"files_omitted"`
	Files        []struct {
		Path string `json:"path"`
	} `json:"files"`
}

// newSession opens a session over HTTP and returns its info.
func (e *env) newSession(t *testing.T, body string) server.SessionInfo {
	t.Helper()
	code, _, b := e.do(t, "POST", "/v1/sessions", body, "Content-Type", "application/json")
	var info server.SessionInfo
	if code != 201 || json.Unmarshal(b, &info) != nil || info.ID == "" {
		t.Fatalf("POST /v1/sessions: %d %s", code, b)
	}
	return info
}

// sh runs a shell script in session id (its exec route) and returns the
// result, failing the test unless the request was served.
func (e *env) sh(t *testing.T, id, script string) sessionResult {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"language": "sh", "code": script})
	code, _, b := e.do(t, "POST", "/v1/sessions/"+id+"/exec", string(body), "Content-Type", "application/json")
	var res sessionResult
	if code != 200 || json.Unmarshal(b, &res) != nil {
		t.Fatalf("exec %q: %d %s", script, code, b)
	}
	return res
}

// put uploads r (length bytes, or -1: chunked) as path in session id.
func (e *env) put(t *testing.T, id, path string, r io.Reader, length int64) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("PUT", "http://airlock/v1/sessions/"+id+"/files/"+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = length
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := e.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func uniqueSleep() string {
	n, _ := rand.Int(rand.Reader, big.NewInt(1e9))
	return fmt.Sprintf("1000.%09d", n.Int64())
}

// A session is a live sandbox: a process left in the background by one
// exec lives on into the next (seen inside and from the host, and
// counted in the session's JSON), a server started in one exec answers
// the next, and DELETE kills them (the host sees none left).
func TestSessionBackground(t *testing.T) {
	e := start(t, 0, nil)
	s := e.newSession(t, "{}")
	marker := uniqueSleep()
	if res := e.sh(t, s.ID, "sleep "+marker+" >/dev/null 2>&1 & echo started"); res.Status != "ok" || res.Stdout != "started\n" {
		t.Fatalf("sleep in the background: %+v", res)
	}
	if res := e.sh(t, s.ID, "ps -e -o args= | grep -cx 'sleep "+marker+"'"); res.Stdout != "1\n" {
		t.Fatalf("the sleep in the next exec: %+v", res)
	}
	if n := len(testutil.HostProcsWith("sleep", marker)); n != 1 {
		t.Fatalf("the host sees %d of the sleep, want 1", n)
	}
	// A server started by one call, fetched by the next.
	if res := e.sh(t, s.ID, "echo served > page.txt; python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 &"); res.Status != "ok" {
		t.Fatalf("server: %+v", res)
	}
	fetch := `import time, urllib.request
for i in range(200):
    try:
        print(urllib.request.urlopen("http://127.0.0.1:8000/page.txt").read().decode(), end="")
        break
    except OSError:
        time.sleep(0.1)
`
	body, _ := json.Marshal(map[string]any{"language": "python", "code": fetch})
	code, _, b := e.do(t, "POST", "/v1/sessions/"+s.ID+"/exec", string(body), "Content-Type", "application/json")
	if code != 200 || !strings.Contains(string(b), `"stdout":"served\n"`) {
		t.Fatalf("the next call fetching the server: %d %s", code, b)
	}
	// Streamed (NDJSON): the output as lines, then the result, though a
	// process it left behind holds its stdout open.
	marker2 := uniqueSleep()
	body, _ = json.Marshal(map[string]any{"language": "sh", "code": "echo a; sleep " + marker2 + " & echo b"})
	code, hdr, b := e.do(t, "POST", "/v1/sessions/"+s.ID+"/exec", string(body), "Content-Type", "application/json", "Accept", "application/x-ndjson")
	var out strings.Builder
	var last map[string]json.RawMessage
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var l map[string]json.RawMessage
		if json.Unmarshal([]byte(line), &l) != nil {
			t.Fatalf("not NDJSON: %q", b)
		}
		var text string
		json.Unmarshal(l["stdout"], &text)
		out.WriteString(text)
		last = l
	}
	if code != 200 || hdr.Get("Content-Type") != "application/x-ndjson" || out.String() != "a\nb\n" || !strings.Contains(string(last["result"]), `"status":"ok"`) {
		t.Fatalf("streamed exec: %d %s", code, b)
	}
	// (The shell may return before its child has exec'd sleep.)
	if !testutil.WaitFor(10*time.Second, func() bool { return len(testutil.HostProcsWith("sleep", marker2)) == 1 }) {
		t.Fatalf("the host sees %d of the streamed exec's background sleep, want 1", len(testutil.HostProcsWith("sleep", marker2)))
	}
	code, _, b = e.do(t, "GET", "/v1/sessions/"+s.ID, "")
	var info server.SessionInfo
	if code != 200 || json.Unmarshal(b, &info) != nil || info.ExpiresAt.IsZero() || info.Workspace.Limit <= 0 || info.Workspace.Used <= 0 {
		t.Fatalf("the session's JSON: %d %s", code, b)
	}
	if code, _, b := e.do(t, "DELETE", "/v1/sessions/"+s.ID, ""); code != 204 {
		t.Fatalf("DELETE: %d %s", code, b)
	}
	if n := len(testutil.HostProcsWith("sleep", marker)) + len(testutil.HostProcsWith("sleep", marker2)); n != 0 {
		t.Fatalf("after DELETE the host sees %d of the sleeps", n)
	}
	if n := len(testutil.HostProcsWith("http.server", "8000")); n != 0 {
		t.Fatalf("after DELETE the host sees %d http.server", n)
	}
}

// A session that idles out kills what runs in it: a background sleep
// is gone from the host once the session left the listing.
func TestSessionIdleKills(t *testing.T) {
	e := start(t, 0, nil)
	s := e.newSession(t, `{"idle_timeout":"500ms"}`)
	marker := uniqueSleep()
	if res := e.sh(t, s.ID, "sleep "+marker+" >/dev/null 2>&1 &"); res.Status != "ok" {
		t.Fatalf("sleep in the background: %+v", res)
	}
	// (The shell may return before its child has exec'd sleep.)
	if !testutil.WaitFor(10*time.Second, func() bool { return len(testutil.HostProcsWith("sleep", marker)) == 1 }) {
		t.Fatal("the host never sees the sleep")
	}
	// Polled by listing: a file request would count as activity.
	if !testutil.WaitFor(20*time.Second, func() bool {
		_, _, b := e.do(t, "GET", "/v1/sessions", "")
		return !strings.Contains(string(b), s.ID)
	}) {
		t.Fatal("the idle session is still listed")
	}
	// The sandbox is marked ended (so unlisted) as its close begins: the
	// kill follows.
	if !testutil.WaitFor(10*time.Second, func() bool { return len(testutil.HostProcsWith("sleep", marker)) == 0 }) {
		t.Fatal("after the idle timeout the host still sees the sleep")
	}
}

// The workspace never loses a user's file: code runs from outside it (a
// user's main.py stays, and is not the run's code), directories made by
// an upload are the sandbox user's (a program writes into them), an
// exec's files say how many it left out, and the listing says how many
// entries it did not list.
func TestSessionWorkspace(t *testing.T) {
	e := start(t, 0, nil)
	s := e.newSession(t, "{}")
	if s.Workspace.Limit <= 0 {
		t.Fatalf("no workspace limit in the session's JSON: %+v", s.Workspace)
	}
	if code, b := e.put(t, s.ID, "main.py", strings.NewReader("print('mine')\n"), -1); code != 204 {
		t.Fatalf("upload main.py: %d %s", code, b)
	}
	body, _ := json.Marshal(map[string]any{"language": "python", "code": "print(open('main.py').read().strip())"})
	code, _, b := e.do(t, "POST", "/v1/sessions/"+s.ID+"/exec", string(body), "Content-Type", "application/json")
	var res sessionResult
	if code != 200 || json.Unmarshal(b, &res) != nil || res.Stdout != "print('mine')\n" {
		t.Fatalf("exec python: %d %s", code, b)
	}
	code, _, b = e.do(t, "GET", "/v1/sessions/"+s.ID+"/files/main.py", "")
	if code != 200 || string(b) != "print('mine')\n" {
		t.Fatalf("main.py after the exec: %d %q", code, b)
	}
	if res.FilesTotal == nil || res.FilesOmitted == nil || *res.FilesTotal != 1 || *res.FilesOmitted != 0 || len(res.Files) != 1 || res.Files[0].Path != "main.py" {
		t.Fatalf("the exec's files: %s", b)
	}

	// Upload a/b/c.txt: the program writes into a and a/b.
	if code, b := e.put(t, s.ID, "dir/sub/a.txt", strings.NewReader("a"), 1); code != 204 {
		t.Fatalf("upload dir/sub/a.txt: %d %s", code, b)
	}
	if res := e.sh(t, s.ID, "echo b > dir/b.txt && echo c > dir/sub/c.txt && mkdir dir/sub/new && cat dir/sub/a.txt"); res.Status != "ok" || res.Stdout != "a" {
		t.Fatalf("writing into uploaded directories: %+v", res)
	}

	// 1500 files: an exec returns 100 and says 1400 more; the listing
	// returns 1000 and says so.
	res = e.sh(t, s.ID, "mkdir many && cd many && i=0; while [ $i -lt 1500 ]; do : > f$i; i=$((i+1)); done")
	if res.Status != "ok" || res.FilesTotal == nil || *res.FilesTotal < 1500 || res.FilesOmitted == nil || *res.FilesOmitted != *res.FilesTotal-len(res.Files) || *res.FilesOmitted == 0 {
		t.Fatalf("an exec's files past the cap: total %v omitted %v listed %d", res.FilesTotal, res.FilesOmitted, len(res.Files))
	}
	code, hdr, b := e.do(t, "GET", "/v1/sessions/"+s.ID+"/files", "")
	var entries []server.FileEntry
	if code != 200 || json.Unmarshal(b, &entries) != nil {
		t.Fatalf("listing: %d %s", code, b)
	}
	total, _ := strconv.Atoi(hdr.Get("Airlock-Files-Total"))
	omitted, _ := strconv.Atoi(hdr.Get("Airlock-Files-Omitted"))
	if total < 1500 || omitted != total-len(entries) || omitted == 0 || len(entries) > 1001 {
		t.Fatalf("listing: %d entries, total %d, omitted %d", len(entries), total, omitted)
	}
}

// Files of any size up to the workspace's limit stream both ways, past
// the server's --max-request (16 MiB by default): 64 MiB up and down,
// whole and by Range.
func TestSessionLargeFiles(t *testing.T) {
	e := start(t, 0, nil)
	s := e.newSession(t, "{}")
	const size = 64 << 20
	if s.Workspace.Limit < 2*size {
		t.Fatalf("the default workspace limit %d is below 128 MiB", s.Workspace.Limit)
	}
	data := make([]byte, size)
	rand.Read(data)
	want := sha256.Sum256(data)
	if code, b := e.put(t, s.ID, "big.bin", bytes.NewReader(data), size); code != 204 {
		t.Fatalf("upload 64 MiB: %d %s", code, b)
	}
	if res := e.sh(t, s.ID, "wc -c < big.bin"); strings.TrimSpace(res.Stdout) != strconv.Itoa(size) {
		t.Fatalf("inside: %+v", res)
	}
	code, hdr, b := e.do(t, "GET", "/v1/sessions/"+s.ID+"/files/big.bin", "")
	if code != 200 || sha256.Sum256(b) != want || hdr.Get("Content-Length") != strconv.Itoa(size) {
		t.Fatalf("download 64 MiB: %d, %d bytes, same %v", code, len(b), sha256.Sum256(b) == want)
	}
	code, hdr, b = e.do(t, "GET", "/v1/sessions/"+s.ID+"/files/big.bin", "", "Range", "bytes=1000-1999")
	if code != 206 || !bytes.Equal(b, data[1000:2000]) || hdr.Get("Content-Range") != fmt.Sprintf("bytes 1000-1999/%d", size) {
		t.Fatalf("Range: %d %v %d bytes", code, hdr, len(b))
	}
	// Chunked (no Content-Length) too.
	if code, b := e.put(t, s.ID, "big2.bin", io.MultiReader(bytes.NewReader(data[:size/2]), bytes.NewReader(data[size/2:])), -1); code != 204 {
		t.Fatalf("chunked upload: %d %s", code, b)
	}
	code, _, b = e.do(t, "GET", "/v1/sessions/"+s.ID+"/files/big2.bin", "")
	if code != 200 || sha256.Sum256(b) != want {
		t.Fatalf("download of the chunked upload: %d %d", code, len(b))
	}
}

// dirSize is the bytes of the regular files under dir.
func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// The workspace is bounded (the served workspace_size, 32 MiB here) and
// never the host's disk: the 3 GB dd fails inside with ENOSPC
// (python's write too, errno 28) and the server's work dir does not grow;
// an upload whose length is past the room left is refused before
// writing (413), one that fills the workspace while streamed is refused
// with 507 and leaves nothing; freeing room makes room.
func TestSessionWorkspaceLimit(t *testing.T) {
	const limit = 32 << 20
	e := start(t, 0, func(c *server.Config) { c.Policy.WorkspaceSize = limit })
	s := e.newSession(t, "{}")
	if s.Workspace.Limit != limit {
		t.Fatalf("workspace limit %d, want %d", s.Workspace.Limit, limit)
	}
	before := dirSize(e.work)
	res := e.sh(t, s.ID, "dd if=/dev/zero of=big bs=1M count=3072 2>&1; echo rc=$?")
	if !strings.Contains(res.Stdout, "No space left on device") || strings.Contains(res.Stdout, "rc=0") {
		t.Fatalf("dd past the limit: %+v", res)
	}
	if grown := dirSize(e.work) - before; grown > 1<<20 {
		t.Fatalf("the server's work dir grew by %d bytes during the dd", grown)
	}
	code, _, b := e.do(t, "GET", "/v1/sessions/"+s.ID, "")
	var info server.SessionInfo
	if json.Unmarshal(b, &info) != nil || code != 200 || info.Workspace.Used < limit-(1<<20) || info.Workspace.Limit != limit {
		t.Fatalf("the session's JSON after the dd: %d %s", code, b)
	}
	body, _ := json.Marshal(map[string]any{"language": "python", "code": "import errno\ntry:\n    open('more', 'wb').write(b'x' * (8 << 20))\nexcept OSError as e:\n    print(errno.errorcode[e.errno])"})
	code, _, b = e.do(t, "POST", "/v1/sessions/"+s.ID+"/exec", string(body), "Content-Type", "application/json")
	if code != 200 || !strings.Contains(string(b), `"stdout":"ENOSPC\n"`) {
		t.Fatalf("python's write past the limit: %d %s", code, b)
	}
	if res := e.sh(t, s.ID, "rm -f big more"); res.Status != "ok" {
		t.Fatalf("rm: %+v", res)
	}
	// Past the room, said by its length: refused before writing.
	code, b = e.put(t, s.ID, "up.bin", bytes.NewReader(make([]byte, limit+1)), limit+1)
	if info := errorOf(t, b); code != 413 || info.Class != policy.ClassInvalid || info.Field != "content" {
		t.Fatalf("an upload past the room: %d %s", code, b)
	}
	// Past the room while streamed (no length): 507, nothing left.
	code, b = e.put(t, s.ID, "up.bin", io.MultiReader(bytes.NewReader(make([]byte, limit/2)), bytes.NewReader(make([]byte, limit))), -1)
	if info := errorOf(t, b); code != 507 || info.Class != policy.ClassInvalid {
		t.Fatalf("a chunked upload past the room: %d %s", code, b)
	}
	if code, _, b := e.do(t, "GET", "/v1/sessions/"+s.ID+"/files/up.bin", ""); code != 404 {
		t.Fatalf("the refused upload left a file: %d %d bytes", code, len(b))
	}
	if code, b := e.put(t, s.ID, "ok.bin", bytes.NewReader(make([]byte, limit/2)), limit/2); code != 204 {
		t.Fatalf("an upload within the room after the refusals: %d %s", code, b)
	}
}
