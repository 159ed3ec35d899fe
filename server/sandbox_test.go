package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	client "github.com/airlock-sandbox/airlock/clients/go"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/server"
)

// startLive is start for live sandboxes: no pool, and the served
// policy's limits degraded where this host gives the caller no cgroup
// (rootless on cgroup v1), as the executor's own live tests do.
func startLive(t *testing.T, mod func(*server.Config)) *env {
	t.Helper()
	testutil.RequireReaper(t)
	return start(t, 0, func(cfg *server.Config) {
		cfg.Policy = policy.Default()
		if !cfg.Executor.Host().Has(policy.CheckCgroup) {
			cfg.Policy.BestEffort = policy.DegradeLimits
		}
		if mod != nil {
			mod(cfg)
		}
	})
}

// hostTree is the host pids of a live sandbox: its pid 1 and every
// descendant, as the host sees them.
func hostTree(t *testing.T, e *env, id string) []int {
	t.Helper()
	sb := e.ex.Sandbox(id)
	if sb == nil {
		t.Fatalf("no sandbox %s in the executor", id)
	}
	var out []int
	var walk func(pid int)
	walk = func(pid int) {
		out = append(out, pid)
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			walk(n)
		}
	}
	walk(sb.HostPID())
	return out
}

// gone reports whether none of pids is a live process any longer (a
// zombie not yet reaped counts as gone: it runs nothing).
func gone(pids []int) bool {
	for _, p := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])); len(f) > 0 && f[0] != "Z" && f[0] != "X" {
			return false
		}
	}
	return true
}

// poll calls f until it reports true (the program inside needs a moment
// to listen), or fails the test after a generous bound.
func poll(t *testing.T, what string, f func() bool) {
	t.Helper()
	if !testutil.WaitFor(20*time.Second, f) {
		t.Fatalf("%s: never", what)
	}
}

// The capability through the routes: a dev server started in the
// background in one call is reached by a later call and from the host
// through the port proxy (with the Go client, raw HTTP and curl);
// `sleep 1000 &` of a foreground call lives on across calls; output is
// read from an offset and streamed; files larger than --max-request go
// both ways, with Range; DELETE leaves no process (judged from the
// host), and the cleanup checks no cgroup or workspace is left.
func TestSandboxServed(t *testing.T) {
	testutil.RequireBinary(t, "python3")
	e := startLive(t, func(cfg *server.Config) { cfg.MaxRequest = 1 << 20 })
	ctx := t.Context()
	code, hdr, body := e.do(t, "POST", "/v1/sandboxes", `{"files":[{"name":"index.html","content":"hello\n"}],"env":{"GREETING":"hi"},"metadata":{"name":"web"},"idle_timeout":"1m"}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	var info client.SandboxInfo
	if err := json.Unmarshal(body, &info); err != nil || info.ID == "" || info.State != "running" || info.Tenant == "" || info.Metadata["name"] != "web" || info.IdleTimeoutMS != 60000 {
		t.Fatalf("create answered %s (%v)", body, err)
	}
	if hdr.Get("Location") != "/v1/sandboxes/"+info.ID {
		t.Fatalf("Location %q", hdr.Get("Location"))
	}
	sb := e.c.Sandbox(info.ID)
	web, err := sb.StartProcess(ctx, client.ProcessSpec{Command: "exec python3 -m http.server 8000 --bind 127.0.0.1", Tag: "web"})
	if err != nil || web.PID <= 0 || web.State != "running" || web.Tag != "web" {
		t.Fatalf("background server: %+v %v", web, err)
	}
	res, err := sb.Exec(ctx, client.ProcessSpec{Command: "sleep 1000 & echo started $GREETING"}, nil, nil)
	if err != nil || res.Status != "ok" || res.Stdout != "started hi\n" {
		t.Fatalf("foreground with a background child: %+v %v", res, err)
	}
	// From the host, through the port proxy.
	hc := sb.PortHTTP(8000)
	var page string
	poll(t, "the dev server through the proxy", func() bool {
		resp, err := hc.Get("http://x/index.html")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		page = string(b)
		return resp.StatusCode == http.StatusOK
	})
	if page != "hello\n" {
		t.Fatalf("through the proxy: %q", page)
	}
	code, hdr, body = e.do(t, "GET", "/v1/sandboxes/"+info.ID+"/ports/8000/index.html?x=1", "")
	if code != http.StatusOK || string(body) != "hello\n" || !strings.HasPrefix(hdr.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("raw proxy: %d %q %v", code, body, hdr)
	}
	out, err := exec.Command("curl", "-sS", "--fail", "--unix-socket", e.sock, "http://localhost/v1/sandboxes/"+info.ID+"/ports/8000/index.html").CombinedOutput()
	if err != nil || string(out) != "hello\n" {
		t.Fatalf("curl through the proxy: %q %v", out, err)
	}
	// A later call reaches it on the sandbox's loopback too.
	res, err = sb.Exec(ctx, client.ProcessSpec{Argv: []string{"curl", "-sS", "http://127.0.0.1:8000/index.html"}}, nil, nil)
	if err != nil || res.Stdout != "hello\n" {
		t.Fatalf("from inside: %+v %v", res, err)
	}
	// The server's log, from an offset, and then past its end.
	ch, err := sb.Output(ctx, web.PID, "stderr", 0)
	if err != nil || !strings.Contains(string(ch.Data), "GET /index.html") || ch.Next != int64(len(ch.Data)) || ch.EOF {
		t.Fatalf("output: %+v %v", ch, err)
	}
	if more, err := sb.Output(ctx, web.PID, "stderr", ch.Next); err != nil || len(more.Data) != 0 {
		t.Fatalf("past the end: %+v %v", more, err)
	}
	// Streamed foreground output.
	var so, se bytes.Buffer
	res, err = sb.Exec(ctx, client.ProcessSpec{Command: "echo out; echo err >&2; exit 3"}, &so, &se)
	if err != nil || res.ExitCode != 3 || so.String() != "out\n" || se.String() != "err\n" || res.Stdout != "" {
		t.Fatalf("streamed: %+v %v %q %q", res, err, so.String(), se.String())
	}
	// Files past --max-request (1 MiB here), both ways, and a Range.
	big := make([]byte, 3<<20)
	rand.Read(big)
	if n, err := sb.WriteFile(ctx, "dir/sub/big.bin", bytes.NewReader(big)); err != nil || n != int64(len(big)) {
		t.Fatalf("upload: %d %v", n, err)
	}
	rc, err := sb.ReadFile(ctx, "dir/sub/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	back, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(back, big) {
		t.Fatalf("download: %d bytes, want %d equal", len(back), len(big))
	}
	code, _, body = e.do(t, "GET", "/v1/sandboxes/"+info.ID+"/files/dir/sub/big.bin", "", "Range", "bytes=100-199")
	if code != http.StatusPartialContent || !bytes.Equal(body, big[100:200]) {
		t.Fatalf("range: %d, %d bytes", code, len(body))
	}
	res, err = sb.Exec(ctx, client.ProcessSpec{Command: "touch dir/sub/mine && stat -c %s dir/sub/big.bin"}, nil, nil)
	if err != nil || res.Status != "ok" || strings.TrimSpace(res.Stdout) != strconv.Itoa(len(big)) {
		t.Fatalf("the program writes into the uploaded dir and sees the file: %+v %v", res, err)
	}
	list, err := sb.Files(ctx)
	if err != nil || list.Total < 3 || list.Omitted != 0 {
		t.Fatalf("list: %+v %v", list, err)
	}
	if err := sb.RemoveFile(ctx, "dir"); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := e.do(t, "GET", "/v1/sandboxes/"+info.ID+"/files/dir/sub/big.bin", ""); code != http.StatusNotFound {
		t.Fatalf("after remove: %d", code)
	}
	// The sleeper lives on: inside, and as the host sees it.
	res, _ = sb.Exec(ctx, client.ProcessSpec{Command: `for p in /proc/[0-9]*; do cat $p/comm; done`}, nil, nil)
	if !strings.Contains(res.Stdout, "sleep\n") {
		t.Fatalf("no sleep inside: %+v", res)
	}
	pids := hostTree(t, e, info.ID)
	if len(pids) < 3 { // pid 1, the server, the sleeper
		t.Fatalf("host tree: %v", pids)
	}
	ps, err := sb.Processes(ctx)
	if err != nil || len(ps) < 2 {
		t.Fatalf("processes: %+v %v", ps, err)
	}
	if err := sb.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	poll(t, "the sandbox's processes gone after DELETE", func() bool { return gone(pids) })
	if code, _, body := e.do(t, "GET", "/v1/sandboxes/"+info.ID, ""); code != http.StatusNotFound {
		t.Fatalf("after delete: %d %s", code, body)
	}
	if got, _ := e.c.Sandboxes(ctx); len(got) != 0 {
		t.Fatalf("listed after delete: %+v", got)
	}
}

// An interactive bash on a pty, over the websocket: it answers
// `echo $((6*7))` with 42, is resized, and its exit ends the stream
// with its result.
func TestSandboxPTY(t *testing.T) {
	e := startLive(t, nil)
	ctx := t.Context()
	sb, _, err := e.c.CreateSandbox(ctx, client.SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := sb.StartProcess(ctx, client.ProcessSpec{Argv: []string{"bash", "--norc", "-i"}, PTY: &client.TTYSize{Rows: 24, Cols: 80}})
	if err != nil || !p.TTY {
		t.Fatalf("start: %+v %v", p, err)
	}
	pt, err := sb.PTY(ctx, p.PID)
	if err != nil {
		t.Fatal(err)
	}
	defer pt.Close()
	if err := pt.Resize(30, 100); err != nil {
		t.Fatal(err)
	}
	pt.Write([]byte("stty size; echo $((6*7))\n"))
	stuck := time.AfterFunc(8*time.Second, func() { pt.Close() }) // a hang fails, naming what came
	defer stuck.Stop()
	var got bytes.Buffer
	buf := make([]byte, 4096)
	for !strings.Contains(got.String(), "\r\n42\r\n") || !strings.Contains(got.String(), "30 100") {
		n, err := pt.Read(buf)
		if err != nil {
			t.Fatalf("read: %v (so far %q)", err, got.String())
		}
		got.Write(buf[:n])
	}
	pt.Write([]byte("exit 7\n"))
	for {
		if _, err := pt.Read(buf); err != nil {
			break
		}
	}
	res, err := pt.Result()
	if err != nil || res == nil || res.ExitCode != 7 {
		t.Fatalf("result: %+v %v", res, err)
	}
}

// Two tenants (tokens) over TCP: B's sandbox is 404 to A on every route
// with the very answer of an unknown id; an id alone, without a token,
// is 401. The port proxy and the tunnel reach only the named sandbox's
// own loopback: not the host's 127.0.0.1:PORT, not another sandbox's
// server on the same port; serve's Authorization never reaches it.
func TestSandboxTenantsAndPorts(t *testing.T) {
	testutil.RequireBinary(t, "python3")
	e := startLive(t, nil)
	base := tenantsTCP(t, e)
	ctx := t.Context()
	// The host's own server on a loopback port.
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hsrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "HOST") })}
	go hsrv.Serve(hl)
	defer hsrv.Close()
	port := hl.Addr().(*net.TCPAddr).Port
	ca, _ := client.New(base, tokA)
	cb, _ := client.New(base, tokB)
	defer ca.Close()
	defer cb.Close()
	a, _, err := ca.CreateSandbox(ctx, client.SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := cb.CreateSandbox(ctx, client.SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// B serves on the same port number, echoing the headers it got.
	srvCode := `import http.server as h
class H(h.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("B\n" + str(self.headers)).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
h.HTTPServer(("127.0.0.1", ` + strconv.Itoa(port) + `), H).serve_forever()`
	if _, err := b.StartProcess(ctx, client.ProcessSpec{Language: "python", Code: srvCode}); err != nil {
		t.Fatal(err)
	}
	var bpage string
	poll(t, "B's server", func() bool {
		resp, err := b.PortHTTP(port).Get("http://x/")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		p, _ := io.ReadAll(resp.Body)
		bpage = string(p)
		return resp.StatusCode == 200
	})
	if !strings.HasPrefix(bpage, "B\n") || strings.Contains(strings.ToLower(bpage), "authorization") || strings.Contains(bpage, tokB) {
		t.Fatalf("B's page (serve's token must not reach it): %q", bpage)
	}
	// A's proxy and tunnel for that port: nothing listens in A.
	resp, err := a.PortHTTP(port).Get("http://x/")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || strings.Contains(string(p), "HOST") || strings.HasPrefix(string(p), "B\n") {
		t.Fatalf("A's proxy reached something: %d %q", resp.StatusCode, p)
	}
	if c, err := a.DialPort(ctx, port); err == nil {
		c.Close()
		t.Fatal("A's tunnel connected to a port nothing in A listens on")
	}
	// B's tunnel reaches B's server.
	conn, err := b.DialPort(ctx, port)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET / HTTP/1.0\r\n\r\n")
	raw, _ := io.ReadAll(conn)
	conn.Close()
	if !bytes.Contains(raw, []byte("\r\n\r\nB\n")) {
		t.Fatalf("through B's tunnel: %q", raw)
	}
	// Every route of B's sandbox, asked by A: the answer of an unknown id.
	routes := []struct{ method, path, body string }{
		{"GET", "", ""}, {"DELETE", "", ""}, {"POST", "/timeout", `{"timeout":"10m"}`}, {"PATCH", "/timeout", `{"timeout":"10m"}`},
		{"POST", "/processes", `{"argv":["true"]}`}, {"GET", "/processes", ""}, {"GET", "/processes/1", ""},
		{"GET", "/processes/1/output", ""}, {"POST", "/processes/1/stdin", `{"data":"x"}`}, {"POST", "/processes/1/signal", `{"signal":"KILL"}`},
		{"POST", "/processes/1/resize", `{"rows":1,"cols":1}`}, {"GET", "/processes/1/pty", ""}, {"GET", "/files", ""},
		{"GET", "/files/a", ""}, {"PUT", "/files/a", "x"}, {"DELETE", "/files/a", ""},
		{"GET", "/ports/" + strconv.Itoa(port), ""}, {"GET", "/ports/" + strconv.Itoa(port) + "/", ""}, {"POST", "/ports/1/x", "{}"},
	}
	for _, r := range routes {
		theirs := call(t, base, tokA, r.method, "/v1/sandboxes/"+b.ID+r.path, r.body)
		unknown := call(t, base, tokA, r.method, "/v1/sandboxes/"+strings.Repeat("0", len(b.ID)-1)+"1"+r.path, r.body)
		unknown.body = strings.ReplaceAll(unknown.body, strings.Repeat("0", len(b.ID)-1)+"1", b.ID)
		if theirs.status != http.StatusNotFound || theirs != unknown {
			t.Errorf("%s %s as another tenant: %+v; an unknown id: %+v", r.method, r.path, theirs, unknown)
		}
		if noTok := call(t, base, "", r.method, "/v1/sandboxes/"+b.ID+r.path, r.body); noTok.status != http.StatusUnauthorized {
			t.Errorf("%s %s without a token: %d", r.method, r.path, noTok.status)
		}
	}
	if list, err := ca.Sandboxes(ctx); err != nil || len(list) != 1 || list[0].ID != a.ID {
		t.Fatalf("A's list: %+v %v", list, err)
	}
	// B's sandbox is untouched: its server still answers.
	resp, err = b.PortHTTP(port).Get("http://x/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("B after A's attempts: %v %v", resp, err)
	}
	resp.Body.Close()
}

// A client following a quiet process's output holds its sandbox open
// past the idle timeout; once it leaves, the sandbox idles out.
func TestSandboxFollowerHoldsIdle(t *testing.T) {
	e := startLive(t, nil)
	sb, _, err := e.c.CreateSandbox(t.Context(), client.SandboxConfig{IdleTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p, err := sb.StartProcess(t.Context(), client.ProcessSpec{Argv: []string{"sleep", "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	followed := make(chan error, 1)
	go func() {
		_, err := sb.Follow(ctx, p.PID, 0, 0, io.Discard, io.Discard)
		followed <- err
	}()
	time.Sleep(3 * time.Second) // three idle timeouts, nothing else touches it
	select {
	case err := <-followed:
		t.Fatalf("the follow ended while the process runs: %v", err)
	default:
	}
	// Judged through the library's registry: a call on the route would
	// touch it, and the follower alone must have held it.
	lib := e.ex.Sandbox(sb.ID)
	if lib == nil || lib.Err() != nil {
		t.Fatalf("idled out under its follower: %v", lib)
	}
	cancel()
	<-followed
	select {
	case <-lib.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("still open after the follower left")
	}
	if !errors.Is(lib.Err(), executor.ErrSandboxIdle) {
		t.Fatalf("ended by %v, want the idle timeout", lib.Err())
	}
}

// A client that goes away leaves its sandbox and background processes
// running (a foreground process it was streaming is killed); the sandbox
// ends at its idle timeout, its processes with it.
func TestSandboxOutlivesClient(t *testing.T) {
	e := startLive(t, nil)
	c, err := client.New("unix:"+e.sock, "")
	if err != nil {
		t.Fatal(err)
	}
	sb, _, err := c.CreateSandbox(t.Context(), client.SandboxConfig{IdleTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	bg, err := sb.StartProcess(t.Context(), client.ProcessSpec{Argv: []string{"sleep", "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	fgDone := make(chan error, 1)
	go func() {
		_, err := sb.Exec(ctx, client.ProcessSpec{Command: "echo up; exec sleep 999"}, io.Discard, nil)
		fgDone <- err
	}()
	poll(t, "the foreground process", func() bool {
		ps, _ := e.c.Sandbox(sb.ID).Processes(t.Context())
		return len(ps) == 2
	})
	cancel()
	<-fgDone
	c.Close()
	pids := hostTree(t, e, sb.ID)
	poll(t, "the streamed foreground process killed", func() bool {
		ps, _ := e.c.Sandbox(sb.ID).Processes(t.Context())
		for _, p := range ps {
			if p.PID != bg.PID && p.State == "running" {
				return false
			}
		}
		return true
	})
	got, err := e.c.Sandbox(sb.ID).Process(t.Context(), bg.PID)
	if err != nil || got.State != "running" {
		t.Fatalf("the background process after its client left: %+v %v", got, err)
	}
	// Now nobody calls: the idle timeout ends it.
	poll(t, "the idle sandbox closed", func() bool { return e.ex.Sandbox(sb.ID) == nil })
	poll(t, "its processes gone", func() bool { return gone(pids) })
	if code, _, _ := e.do(t, "GET", "/v1/sandboxes/"+sb.ID, ""); code != http.StatusNotFound {
		t.Fatalf("after the idle timeout: %d", code)
	}
}

// Drain (serve's SIGTERM) closes every sandbox: their processes are
// gone, and a new one is refused with a retryable 503.
func TestSandboxDrain(t *testing.T) {
	e := startLive(t, nil)
	var all []int
	for range 2 {
		sb, _, err := e.c.CreateSandbox(t.Context(), client.SandboxConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sb.Exec(t.Context(), client.ProcessSpec{Command: "sleep 1000 & sleep 1001 &"}, nil, nil); err != nil {
			t.Fatal(err)
		}
		all = append(all, hostTree(t, e, sb.ID)...)
	}
	if len(all) < 6 {
		t.Fatalf("host trees: %v", all)
	}
	if err := e.srv.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !gone(all) {
		t.Fatalf("processes left after Drain: %v", all)
	}
	code, hdr, body := e.do(t, "POST", "/v1/sandboxes", "{}")
	if info := errorOf(t, body); code != http.StatusServiceUnavailable || !info.Retryable || hdr.Get("Retry-After") == "" {
		t.Fatalf("create while draining: %d %s", code, body)
	}
}

// The limits: a tenant's sandboxes, a sandbox's processes, the output a
// tenant's processes may hold buffered; each a retryable 429 naming its
// flag, and each frees once what holds it ends.
func TestSandboxLimits(t *testing.T) {
	e := startLive(t, func(cfg *server.Config) {
		cfg.TenantMaxSandboxes, cfg.SandboxMaxProcesses = 1, 1
		cfg.TenantMaxSandboxBuffer = 5 << 20 // two processes of 2 MiB (1 MiB a stream) fit, a third not
	})
	ctx := t.Context()
	sb, _, err := e.c.CreateSandbox(ctx, client.SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = e.c.CreateSandbox(ctx, client.SandboxConfig{})
	var ce *client.Error
	if !errorsAs(err, &ce) || ce.Status != http.StatusTooManyRequests || !ce.Retryable || !strings.Contains(ce.Message, "--tenant-max-sandboxes") {
		t.Fatalf("a second sandbox: %v", err)
	}
	p, err := sb.StartProcess(ctx, client.ProcessSpec{Argv: []string{"sleep", "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sb.StartProcess(ctx, client.ProcessSpec{Argv: []string{"true"}})
	if !errorsAs(err, &ce) || ce.Status != http.StatusTooManyRequests || !strings.Contains(ce.Message, "--sandbox-max-processes") {
		t.Fatalf("a second process: %v", err)
	}
	if err := sb.Signal(ctx, p.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll(t, "the killed process ended", func() bool {
		i, err := sb.Process(ctx, p.PID)
		return err == nil && i.State == "exited" && i.Status == "signaled"
	})
	// Two processes are kept (one ended, one now) past the buffer cap?
	if _, err := sb.Exec(ctx, client.ProcessSpec{Argv: []string{"true"}}, nil, nil); err != nil {
		t.Fatalf("a process once the first ended: %v", err)
	}
	_, err = sb.Exec(ctx, client.ProcessSpec{Argv: []string{"true"}}, nil, nil)
	if !errorsAs(err, &ce) || ce.Status != http.StatusTooManyRequests || !strings.Contains(ce.Message, "--tenant-max-sandbox-buffer") {
		t.Fatalf("past the buffer cap: %v", err)
	}
	if err := sb.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.c.CreateSandbox(ctx, client.SandboxConfig{}); err != nil {
		t.Fatalf("a sandbox once the first was deleted: %v", err)
	}
}

// Requests the routes refuse before anything runs, each naming its field.
func TestSandboxRefusals(t *testing.T) {
	e := startLive(t, func(cfg *server.Config) { cfg.SandboxMaxLifetime = time.Hour })
	for _, c := range []struct{ body, field string }{
		{`{"timeout":"2h"}`, "timeout"},
		{`{"idle_timeout":"1h"}`, "idle_timeout"},
		{`{"policy":{"memory":"1TiB"}}`, "policy.memory"},
		{`{"mounts":[]}`, "mounts"},
		{`{"files":[{"name":"../x","content":""}]}`, "file name"},
	} {
		code, _, body := e.do(t, "POST", "/v1/sandboxes", c.body)
		if info := errorOf(t, body); code != http.StatusBadRequest || info.Field != c.field {
			t.Errorf("%s: %d %s", c.body, code, body)
		}
	}
	sb, _, err := e.c.CreateSandbox(t.Context(), client.SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ body, field string }{
		{`{}`, "argv"},
		{`{"argv":["true"],"command":"true"}`, "argv"},
		{`{"command":"true","pty":{"rows":1,"cols":1}}`, "pty"},
		{`{"command":"true","stdin_open":true}`, "stdin_open"},
		{`{"command":"true","timeout":"1h"}`, "timeout"},
		{`{"language":"cobol","code":"x"}`, "language"},
	} {
		code, _, body := e.do(t, "POST", "/v1/sandboxes/"+sb.ID+"/processes", c.body, "Content-Type", "application/json")
		if info := errorOf(t, body); code/100 != 4 || info.Field != c.field {
			t.Errorf("%s: %d %s", c.body, code, body)
		}
	}
	if code, _, body := e.do(t, "POST", "/v1/sandboxes/"+sb.ID+"/processes/99999/signal", `{"signal":"TERM"}`); code != http.StatusNotFound {
		t.Errorf("an unknown pid: %d %s", code, body)
	}
	p, err := sb.StartProcess(t.Context(), client.ProcessSpec{Argv: []string{"cat"}, StdinOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	if code, _, body := e.do(t, "POST", "/v1/sandboxes/"+sb.ID+"/processes/"+strconv.Itoa(p.PID)+"/signal", `{"signal":"NOPE"}`); code != http.StatusBadRequest || errorOf(t, body).Field != "signal" {
		t.Errorf("a bad signal: %d %s", code, body)
	}
	// stdin written as raw bytes, then closed: cat echoes and ends.
	if code, _, body := e.do(t, "POST", "/v1/sandboxes/"+sb.ID+"/processes/"+strconv.Itoa(p.PID)+"/stdin?close=1", "ping", "Content-Type", "application/octet-stream"); code != http.StatusNoContent {
		t.Fatalf("stdin: %d %s", code, body)
	}
	res, err := sb.Follow(t.Context(), p.PID, 0, 0, io.Discard, io.Discard)
	if err != nil || res.Status != "ok" || res.Stdout != "ping" {
		t.Fatalf("cat after its stdin: %+v %v", res, err)
	}
}

func errorsAs(err error, target **client.Error) bool {
	ce, ok := err.(*client.Error)
	if ok {
		*target = ce
	}
	return ok
}

// An upgrade through the port proxy (a websocket's handshake) passes
// through: after the sandbox's 101, the connection carries bytes both
// ways, as a dev server's live reload needs.
func TestSandboxProxyUpgrade(t *testing.T) {
	testutil.RequireBinary(t, "python3")
	e := startLive(t, nil)
	sb, _, err := e.c.CreateSandbox(t.Context(), client.SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// A server that answers any request with 101 and then echoes.
	code := `import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", 9000)); s.listen(4)
while True:
    c, _ = s.accept(); req = b""
    while b"\r\n\r\n" not in req:
        req += c.recv(4096)
    c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
    while True:
        d = c.recv(4096)
        if not d: break
        c.sendall(d.upper())
    c.close()`
	if _, err := sb.StartProcess(t.Context(), client.ProcessSpec{Language: "python", Code: code}); err != nil {
		t.Fatal(err)
	}
	var conn net.Conn
	var br *bufio.Reader
	poll(t, "the upgrade through the proxy", func() bool {
		c, err := net.Dial("unix", e.sock)
		if err != nil {
			return false
		}
		fmt.Fprintf(c, "GET /v1/sandboxes/%s/ports/9000/live HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", sb.ID)
		br = bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
			c.Close()
			return false
		}
		conn = c
		return true
	})
	defer conn.Close()
	io.WriteString(conn, "ping")
	got := make([]byte, 4)
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "PING" {
		t.Fatalf("through the upgraded connection: %q %v", got, err)
	}
}

// The direct API (OpenSandbox, SandboxByID) is the routes' registry: its
// sandboxes are tenant local's (a unix socket peer is another tenant and
// gets 404), count against the same limits, and close at Drain.
func TestSandboxDirectAPI(t *testing.T) {
	e := startLive(t, func(cfg *server.Config) { cfg.MaxSandboxes = 1 })
	ctx := t.Context()
	sb, err := e.srv.OpenSandbox(ctx, &server.SandboxRequest{Env: map[string]string{"X": "y"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := e.srv.SandboxByID(ctx, sb.ID()); err != nil || got != sb {
		t.Fatalf("SandboxByID: %v %v", got, err)
	}
	res, err := sb.Run(ctx, executor.ProcessRequest{Command: "echo $X"}, nil)
	if err != nil || res.Stdout != "y\n" {
		t.Fatalf("run: %+v %v", res, err)
	}
	if code, _, _ := e.do(t, "GET", "/v1/sandboxes/"+sb.ID(), ""); code != http.StatusNotFound {
		t.Fatalf("another tenant over the socket: %d", code)
	}
	if _, err := e.srv.OpenSandbox(ctx, &server.SandboxRequest{}); !errors.Is(err, policy.ErrUnavailable) {
		t.Fatalf("past --max-sandboxes: %v", err)
	}
	if err := e.srv.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(sb.Err(), executor.ErrSandboxClosed) {
		t.Fatalf("after Drain: %v", sb.Err())
	}
	if _, err := e.srv.SandboxByID(ctx, sb.ID()); err == nil {
		t.Fatal("found after Drain")
	}
}

// The Go client's remaining calls against the routes: Info, SetTimeout
// (moves expires_at), Stdin (kept open, then closed), Output of both
// streams, Resize of a pty, and DeleteSandbox.
func TestSandboxClientCalls(t *testing.T) {
	e := startLive(t, nil)
	ctx := t.Context()
	sb, info, err := e.c.CreateSandbox(ctx, client.SandboxConfig{Timeout: time.Hour, Metadata: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := sb.Info(ctx)
	if err != nil || got.ID != info.ID || got.Metadata["k"] != "v" {
		t.Fatalf("info: %+v %v", got, err)
	}
	moved, err := sb.SetTimeout(ctx, 2*time.Hour)
	if err != nil || !moved.ExpiresAt.After(info.ExpiresAt.Add(50*time.Minute)) {
		t.Fatalf("set timeout: %v -> %+v %v", info.ExpiresAt, moved, err)
	}
	if _, err := sb.SetTimeout(ctx, 48*time.Hour); err == nil {
		t.Fatal("a lifetime past --sandbox-max-lifetime was taken")
	}
	p, err := sb.StartProcess(ctx, client.ProcessSpec{Command: "cat; echo done >&2", StdinOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Stdin(ctx, p.PID, []byte("one "), false); err != nil {
		t.Fatal(err)
	}
	if err := sb.Stdin(ctx, p.PID, []byte("two"), true); err != nil {
		t.Fatal(err)
	}
	poll(t, "cat's end", func() bool { i, _ := sb.Process(ctx, p.PID); return i != nil && i.State == "exited" })
	out, err := sb.Output(ctx, p.PID, "stdout", 0)
	if err != nil || string(out.Data) != "one two" || !out.EOF {
		t.Fatalf("stdout: %+v %v", out, err)
	}
	if errs, err := sb.Output(ctx, p.PID, "stderr", 0); err != nil || string(errs.Data) != "done\n" {
		t.Fatalf("stderr: %+v %v", errs, err)
	}
	tp, err := sb.StartProcess(ctx, client.ProcessSpec{Command: "read x; stty size", PTY: &client.TTYSize{Rows: 10, Cols: 20}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Resize(ctx, tp.PID, 33, 77); err != nil {
		t.Fatal(err)
	}
	if err := sb.Stdin(ctx, tp.PID, []byte("\n"), false); err != nil {
		t.Fatal(err)
	}
	var term bytes.Buffer
	if _, err := sb.Follow(ctx, tp.PID, 0, 0, &term, nil); err != nil || !strings.Contains(term.String(), "33 77") {
		t.Fatalf("the pty after Resize: %q %v", term.String(), err)
	}
	if err := sb.Resize(ctx, p.PID, 1, 1); err == nil {
		t.Fatal("resized a process without a pty")
	}
	if err := e.c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Info(ctx); err == nil {
		t.Fatal("described after delete")
	}
}

// A background process's stdin given at once is written beside the
// answer: 1 MiB to a program that reads nothing until signalled does not
// hold the 201 (the pipe holds 64 KiB; were it written first, the start
// would never answer and this test would hang), and all of it arrives.
func TestSandboxBackgroundStdin(t *testing.T) {
	e := startLive(t, nil)
	ctx := t.Context()
	sb, _, err := e.c.CreateSandbox(ctx, client.SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := sb.StartProcess(ctx, client.ProcessSpec{Command: `trap 'wc -c; exit 0' USR1; echo ready >&2; while :; do sleep 0.05; done`, Stdin: bytes.Repeat([]byte("x"), 1<<20)})
	if err != nil {
		t.Fatal(err)
	}
	poll(t, "the trap set", func() bool {
		o, err := sb.Output(ctx, p.PID, "stderr", 0)
		return err == nil && string(o.Data) == "ready\n"
	})
	if err := sb.Signal(ctx, p.PID, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	res, err := sb.Follow(ctx, p.PID, 0, 0, io.Discard, io.Discard)
	if err != nil || strings.TrimSpace(res.Stdout) != "1048576" {
		t.Fatalf("%+v %v", res, err)
	}
}
