package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	client "github.com/airlock-sandbox/airlock/clients/go"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/policy/hostprobe"
)

// served is an `airlock serve` process (this test binary as the CLI).
type served struct {
	cmd    *exec.Cmd
	sock   string
	work   string
	stderr *lockedBuffer
	done   chan error
}

// lockedBuffer is a process's stderr, read while it writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// tcpAddr is the address of s's TCP listener, from its log.
func (s *served) tcpAddr(t *testing.T) string {
	t.Helper()
	// serve may answer on its socket before its log line for the TCP
	// listener reaches the pipe: wait for it, bounded.
	re := regexp.MustCompile(`msg=listening address=tcp:(127\.0\.0\.1:[0-9]+)`)
	var m []string
	testutil.WaitFor(10*time.Second, func() bool { m = re.FindStringSubmatch(s.stderr.String()); return m != nil })
	if m == nil {
		t.Fatalf("no TCP listener in the log:\n%s", s.stderr)
	}
	return m[1]
}

// unixClient is an HTTP client of s's unix socket.
func (s *served) unixClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", s.sock)
	}}}
}

// serve starts `airlock serve` on DIR/s.sock with DIR/work and waits
// until it answers.
func serve(t *testing.T, dir string, args ...string) *served {
	t.Helper()
	return serveUnder(t, dir, nil, args...)
}

// serveUnder is serve started by launcher (its argv, the CLI's follows).
func serveUnder(t *testing.T, dir string, launcher []string, args ...string) *served {
	t.Helper()
	testutil.RequireUserNS(t)
	s := &served{sock: filepath.Join(dir, "s.sock"), work: filepath.Join(dir, "work"), stderr: &lockedBuffer{}, done: make(chan error, 1)}
	argv := append(append(slices.Clip(launcher), os.Args[0], "serve", "--listen", "unix:"+s.sock, "--work-dir", s.work, "--max-concurrent", "2"), args...)
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Env = []string{"AIRLOCK_TEST_AS_CLI=1", "PATH=/usr/bin:/bin", "HOME=" + dir, "XDG_CACHE_HOME=" + filepath.Join(dir, "cache"), "TMPDIR=" + dir}
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-s.done
	})
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", s.sock)
	}}}
	defer hc.CloseIdleConnections()
	if !testutil.WaitFor(20*time.Second, func() bool {
		resp, err := hc.Get("http://airlock/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	}) {
		t.Fatalf("airlock serve did not start: %s", s.stderr)
	}
	return s
}

// serveDir is a directory the sandbox's host uid can reach (the work
// directory's workspaces are bound in).
func serveDir(t *testing.T) string {
	t.Helper()
	dir := testutil.WorldReadableDir(t)
	// A unix socket path has at most 107 bytes.
	if len(dir) > 80 {
		d, err := os.MkdirTemp("", "serve")
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, 0o755)
		t.Cleanup(func() { os.RemoveAll(d) })
		dir = d
	}
	return dir
}

// SIGTERM drains: the run in flight finishes, the server exits 0, and
// nothing is left: no sandbox, cgroup, workspace or socket.
func TestServeSIGTERMDrains(t *testing.T) {
	dir := serveDir(t)
	s := serve(t, dir)
	fi, err := os.Stat(s.sock)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v", fi.Mode(), err)
	}
	c, err := client.New("unix:"+s.sock, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Execute(t.Context(), executor.Request{Args: []string{"echo", "served"}})
	if err != nil || res.Stdout != "served\n" {
		t.Fatalf("%v %+v", err, res)
	}
	got := make(chan *executor.Result, 1)
	const marker = "1.0390625" // sleep's seconds, and the run's mark on the host
	go func() {
		r, err := c.Execute(context.Background(), executor.Request{Args: []string{"sh", "-c", "sleep " + marker + "; echo finished"}})
		if err != nil {
			t.Errorf("the run in flight at SIGTERM: %v", err)
		}
		got <- r
	}()
	// In flight once its sleep runs, not after a fixed 300 ms: in the
	// loaded emulated guest the request could still be on its way.
	if !testutil.WaitFor(time.Minute, func() bool { return len(testutil.HostProcsWith("sleep", marker)) == 1 }) {
		t.Fatalf("the run never started\n%s", s.stderr)
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, s.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit after SIGTERM\n%s", s.stderr)
	}
	if r := <-got; r == nil || r.Stdout != "finished\n" {
		t.Fatalf("drained run: %+v", r)
	}
	s.done <- nil // for the cleanup
	if _, err := os.Stat(s.sock); err == nil {
		t.Error("socket left behind")
	}
	if left, _ := os.ReadDir(s.work); len(left) != 1 || left[0].Name() != ".lock" {
		t.Errorf("work dir: %v", left)
	}
	if left := testutil.CgroupsOf([]int{s.cmd.Process.Pid}); len(left) > 0 {
		t.Errorf("cgroups left: %v", left)
	}
}

// SIGKILL of the server kills its sandboxes with it; the next start
// removes its cgroups and workspaces.
func TestServeSIGKILLLeavesNothingRunning(t *testing.T) {
	dir := serveDir(t)
	s := serve(t, dir)
	marker := "4242.25"
	req, _ := http.NewRequest("POST", "http://airlock/v1/run", strings.NewReader(`{"argv":["sh","-c","echo up; exec sleep `+marker+`"]}`))
	req.Header.Set("Accept", "application/x-ndjson")
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", s.sock)
	}}}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.Contains(line, "up") {
		t.Fatalf("%q %v", line, err)
	}
	if !testutil.WaitFor(10*time.Second, func() bool { return len(testutil.HostProcsWith("sleep", marker)) == 1 }) {
		t.Fatal("the sandboxed sleep is not running")
	}
	pid := s.cmd.Process.Pid
	s.cmd.Process.Kill()
	<-s.done
	s.done <- nil
	if !testutil.WaitFor(10*time.Second, func() bool { return len(testutil.HostProcsWith("sleep", marker)) == 0 }) {
		t.Fatalf("sandbox outlived the killed server: %v", testutil.HostProcsWith("sleep", marker))
	}
	// What the killed server left: its workspaces, and as root its
	// cgroups (the running one and the warm pool's).
	stale, _ := filepath.Glob(filepath.Join(s.work, "airlock-ws-*"))
	if len(stale) == 0 {
		t.Fatal("the killed server left no workspace: nothing to prove")
	}
	if os.Getuid() == 0 && len(testutil.CgroupsOf([]int{pid})) == 0 {
		t.Fatal("the killed server left no cgroup: nothing to prove")
	}
	// The next server on the same work dir removes all of it.
	serve(t, dir)
	if left := testutil.CgroupsOf([]int{pid}); len(left) > 0 {
		t.Errorf("stale cgroups of the killed server: %v", left)
	}
	for _, ws := range stale {
		if testutil.Exists(ws) {
			t.Errorf("stale workspace %s", ws)
		}
	}
}

// The refusals at start: off loopback without a token, a token file
// others can read, a work dir in use.
func TestServeRefusesUnsafeStart(t *testing.T) {
	testutil.RequireUserNS(t)
	dir := serveDir(t)
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("0123456789abcdef0123\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "tcp:0.0.0.0:0"}, "--token-file"},
		{[]string{"--listen", "tcp:127.0.0.1:0", "--token-file", tok}, "readable by every user"},
		{[]string{"--listen", "udp:x"}, "unix:PATH or tcp:HOST:PORT"},
		{[]string{"--listen", "unix:" + filepath.Join(dir, "s"), "--workspace", "/tmp"}, "workspace"},
	} {
		var stderr bytes.Buffer
		code := serveCmd(append(c.args, "--work-dir", filepath.Join(dir, "w")), io.Discard, &stderr)
		if code != exitSetup || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want %d naming %q", c.args, code, stderr.String(), exitSetup, c.want)
		}
	}
	s := serve(t, dir)
	var stderr bytes.Buffer
	if code := serveCmd([]string{"--listen", "unix:" + filepath.Join(dir, "other.sock"), "--work-dir", s.work}, io.Discard, &stderr); code != exitSetup || !strings.Contains(stderr.String(), "in use") {
		t.Errorf("second server on one work dir: exit %d %q", code, stderr.String())
	}
	if code := serveCmd([]string{"--listen", "unix:" + s.sock, "--work-dir", filepath.Join(dir, "w2")}, io.Discard, &stderr); code != exitSetup || !strings.Contains(stderr.String(), "another server is listening") {
		t.Errorf("second server on one socket: exit %d %q", code, stderr.String())
	}
}

// Mixed requests in flight (ok, timeout, output flood, a client leaving
// mid-stream, long runs) when the server gets SIGTERM: the finished ones
// are answered correctly, the long ones are killed at the drain deadline
// and answered 503 (retryable), the server exits 0, and nothing is left:
// no sandbox process, cgroup, workspace or socket. (The 200-request mix
// against the server package is server's TestLoadThenDrain.)
func TestServeMixedLoadThenSIGTERM(t *testing.T) {
	dir := serveDir(t)
	s := serve(t, dir, "--drain-timeout", "1s", "--max-queue", "100")
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", s.sock)
	}}}
	defer hc.CloseIdleConnections()
	post := func(ctx context.Context, body string, stream bool) (int, string, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://airlock/v1/run", strings.NewReader(body))
		if stream {
			req.Header.Set("Accept", "application/x-ndjson")
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, err = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String(), err
	}
	const marker = "4343.5"
	type outcome struct {
		kind        string
		code        int
		body        string
		err         error
		wantCode    int
		wantContain string
	}
	results := make(chan outcome, 64)
	start := func(kind, body string, stream bool, wantCode int, want string) {
		go func() {
			code, b, err := post(context.Background(), body, stream)
			results <- outcome{kind, code, b, err, wantCode, want}
		}()
	}
	n := 0
	for i := range 32 {
		switch i % 4 {
		case 0, 1:
			start("ok", `{"argv":["echo","fine"]}`, i%8 == 0, 200, `"status":"ok"`)
		case 2:
			start("timeout", `{"argv":["sleep","20"],"policy":{"timeout":"200ms"}}`, false, 200, `"status":"timeout"`)
		case 3:
			start("flood", `{"argv":["sh","-c","while :; do echo floodfloodflood; done"],"policy":{"max_output":"8KiB"}}`, i%8 == 3, 200, `"status":"output_limit"`)
		}
		n++
	}
	// A client that leaves mid-stream.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://airlock/v1/run", strings.NewReader(`{"argv":["sh","-c","while :; do echo tick; sleep 0.05; done"]}`))
	req.Header.Set("Accept", "application/x-ndjson")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.Contains(line, "tick") {
		t.Fatalf("%q %v", line, err)
	}
	cancel()
	resp.Body.Close()
	for range n {
		o := <-results
		if o.err != nil || o.code != o.wantCode || !strings.Contains(o.body, o.wantContain) {
			t.Errorf("%s: %d %v %.300s", o.kind, o.code, o.err, o.body)
		}
	}
	// Long runs in flight at SIGTERM, one streaming.
	for i := range 2 {
		start("long", `{"argv":["sleep","`+marker+`"]}`, i == 0, 503, `"retryable":true`)
	}
	if !testutil.WaitFor(10*time.Second, func() bool { return len(testutil.HostProcsWith("sleep", marker)) == 2 }) {
		t.Fatal("the long runs did not start")
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	for range 2 {
		o := <-results
		if o.err != nil || o.code != o.wantCode || !strings.Contains(o.body, o.wantContain) {
			t.Errorf("killed at the drain deadline: %d %v %.300s", o.code, o.err, o.body)
		}
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, s.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit after SIGTERM\n%s", s.stderr)
	}
	s.done <- nil
	if left := testutil.HostProcsWith("sleep", marker); len(left) > 0 {
		t.Errorf("sandboxes left: %v", left)
	}
	if left := testutil.CgroupsOf([]int{s.cmd.Process.Pid}); len(left) > 0 {
		t.Errorf("cgroups left: %v", left)
	}
	if left, _ := os.ReadDir(s.work); len(left) != 1 {
		t.Errorf("work dir: %v", left)
	}
	if testutil.Exists(s.sock) {
		t.Error("socket left")
	}
}

// A served program starts with every signal at its default and none
// blocked, whatever the daemon's caller ignored or blocked (here SIGHUP,
// which Go's runtime keeps ignored, SIGPIPE, SIGUSR1 and SIGWINCH): from
// the warm pool and cold.
func TestServedProgramSignalDefaults(t *testing.T) {
	python := testutil.RequireBinary(t, "python3")
	launcher := []string{python, "-c", ignoreThen, "1", "13", "b10", "b28", "--"}
	for name, args := range map[string][]string{"pool": nil, "cold": {"--pool", "0"}} {
		t.Run(name, func(t *testing.T) {
			s := serveUnder(t, serveDir(t), launcher, args...)
			c, err := client.New("unix:"+s.sock, "")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			res, err := c.Execute(t.Context(), executor.Request{Args: []string{"grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"}})
			if err != nil || res.Status != "ok" {
				t.Fatalf("%v %+v\n%s", err, res, s.stderr)
			}
			if want := "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n"; res.Stdout != want {
				t.Errorf("the served program's %q, want %q", res.Stdout, want)
			}
		})
	}
}

// The run flags serve and mcp could only ignore are refused, naming why:
// exit 125, nothing served (the CLI as a process, so that a server that
// starts instead is killed and reported, not waited for).
func TestServeRefusesIdleFlags(t *testing.T) {
	testutil.RequireUserNS(t)
	dir := serveDir(t)
	sock := filepath.Join(dir, "s.sock")
	for _, cmd := range []string{"serve", "mcp"} {
		for _, c := range [][]string{{"--tty"}, {"--json"}, {"--json=false"}, {"--verbose"}, {"--kill-grace", "5s"}} {
			args := append([]string{cmd, "--listen", "unix:" + sock, "--work-dir", filepath.Join(dir, "w"), "--pool", "0"}, c...)
			p := exec.Command(os.Args[0], args...)
			p.Env = []string{"AIRLOCK_TEST_AS_CLI=1", "PATH=/usr/bin:/bin", "HOME=" + dir, "XDG_CACHE_HOME=" + filepath.Join(dir, "cache"), "TMPDIR=" + dir}
			var stderr lockedBuffer
			p.Stderr = &stderr
			if err := p.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { p.Wait(); close(done) }()
			exited := testutil.WaitFor(time.Minute, func() bool {
				select {
				case <-done:
					return true
				default:
					return testutil.Exists(sock)
				}
			})
			if !exited || testutil.Exists(sock) {
				p.Process.Kill()
				<-done
				os.Remove(sock)
				t.Errorf("%s %v: served instead of refusing the flag\n%s", cmd, c, &stderr)
				continue
			}
			<-done
			flag, _, _ := strings.Cut(c[0], "=")
			if code := p.ProcessState.ExitCode(); code != exitSetup || !strings.Contains(stderr.String(), flag) || !strings.Contains(stderr.String(), "does nothing with it") {
				t.Errorf("%s %v: exit %d, %q; want %d naming %s and why", cmd, c, code, &stderr, exitSetup, flag)
			}
		}
	}
}

// airlock serve on TCP loopback without a token, end to end: a foreign
// Host, a foreign Origin, a text/plain body are refused and run nothing
// (the runs counter, read over the unix socket, stays empty); the same
// requests as a local program sends them run. With a token, the foreign
// Host carrying it is served (the scheme in any case), and without it or
// with a wrong one is refused.
func TestServeTCPLoopbackGuard(t *testing.T) {
	dir := serveDir(t)
	s := serve(t, dir, "--listen", "tcp:127.0.0.1:0", "--pool", "0")
	addr := s.tcpAddr(t)
	uc := s.unixClient()
	defer uc.CloseIdleConnections()
	runs := func(hc *http.Client, base string, hdr ...string) string {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/metrics", nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "airlock_runs_total") {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	do := func(method, path, body string, hdr ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
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
		return resp.StatusCode, string(b)
	}
	const exec = `{"language":"sh","code":"echo ran"}`
	const piston = `{"language":"bash","version":"*","files":[{"content":"echo ran"}]}`
	for _, c := range []struct {
		method, path, body string
		hdr                []string
		status             int
		field              string
	}{
		{"POST", "/v1/exec", exec, []string{"Host", "attacker.example", "Content-Type", "application/json"}, 403, "host"},
		{"POST", "/v1/exec", exec, []string{"Origin", "http://attacker.example", "Content-Type", "application/json"}, 403, "origin"},
		{"POST", "/v1/exec", exec, []string{"Content-Type", "text/plain"}, 415, "content-type"},
		{"POST", "/api/v2/execute", piston, []string{"Content-Type", "text/plain;charset=UTF-8"}, 415, "content-type"},
		{"GET", "/v1/sessions", "", []string{"Host", "attacker.example"}, 403, "host"},
	} {
		code, b := do(c.method, c.path, c.body, c.hdr...)
		if code != c.status || !strings.Contains(b, `"field":"`+c.field+`"`) || !strings.Contains(b, "--token-file") {
			t.Errorf("%s %s %v: %d %s, want %d naming %s and the token", c.method, c.path, c.hdr, code, b, c.status, c.field)
		}
	}
	if m := runs(uc, "http://airlock"); m != "" {
		t.Fatalf("a refused request ran: %s", m)
	}
	if code, b := do("POST", "/v1/exec", exec, "Content-Type", "application/json"); code != 200 || !strings.Contains(b, `"stdout":"ran\n"`) {
		t.Fatalf("exec from a local program: %d %s", code, b)
	}
	if code, b := do("POST", "/api/v2/execute", piston, "Host", "localhost", "Content-Type", "application/json"); code != 200 || !strings.Contains(b, `"stdout":"ran\n"`) {
		t.Fatalf("Piston from a local program: %d %s", code, b)
	}
	if m := runs(uc, "http://airlock"); !strings.Contains(m, `kind="exec",status="ok"} 1`) || !strings.Contains(m, `kind="piston",status="ok"} 1`) {
		t.Fatalf("runs: %s, want one exec and one piston", m)
	}

	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir2 := serveDir(t)
	s2 := serve(t, dir2, "--listen", "tcp:127.0.0.1:0", "--pool", "0", "--token-file", tok)
	addr = s2.tcpAddr(t)
	foreign := []string{"Host", "attacker.example", "Origin", "http://attacker.example", "Content-Type", "text/plain"}
	for _, c := range []struct {
		auth   string
		status int
	}{{"", 401}, {"Bearer 0123456789abcdef0124", 401}, {"bearer 0123456789abcdef0123", 200}, {"BEARER 0123456789abcdef0123", 200}} {
		code, b := do("POST", "/v1/exec", exec, append(slices.Clone(foreign), "Authorization", c.auth)...)
		if code != c.status {
			t.Errorf("with a token, foreign headers, Authorization %q: %d %s, want %d", c.auth, code, b, c.status)
		}
	}
	if m := runs(s2.unixClient(), "http://airlock"); m != `airlock_runs_total{kind="exec",status="ok"} 2` {
		t.Fatalf("runs: %q, want the 2 with the token", m)
	}
}

// While it drains, airlock serve still answers: /healthz says 503 (as
// the docs promise, for a load balancer to stop sending), a new run gets
// a retryable 503, on the unix socket and on TCP; then the run in flight
// ends (here its client leaves) and the server exits 0.
func TestServeHealthzWhileDraining(t *testing.T) {
	dir := serveDir(t)
	s := serve(t, dir, "--listen", "tcp:127.0.0.1:0", "--pool", "0", "--drain-timeout", "5m")
	addr := s.tcpAddr(t)
	uc := s.unixClient()
	defer uc.CloseIdleConnections()
	const marker = "4444.75"
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://airlock/v1/run", strings.NewReader(`{"argv":["sh","-c","echo up; exec sleep `+marker+`"]}`))
	req.Header.Set("Accept", "application/x-ndjson")
	resp, err := uc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.Contains(line, "up") {
		t.Fatalf("%q %v", line, err)
	}
	// The shell prints before it execs the sleep that the host looks for
	// below: wait for the exec (a loaded machine may take a while).
	if !testutil.WaitFor(30*time.Second, func() bool { return len(testutil.HostProcsWith("sleep", marker)) == 1 }) {
		t.Fatal("the run's sleep never started")
	}
	health := func(hc *http.Client, url string) (int, error) {
		// A new connection each time: a refused one is what is tested.
		hc.CloseIdleConnections()
		r, err := hc.Get(url + "/healthz")
		if err != nil {
			return 0, err
		}
		r.Body.Close()
		return r.StatusCode, nil
	}
	tc := &http.Client{}
	for _, u := range []struct {
		hc  *http.Client
		url string
	}{{uc, "http://airlock"}, {tc, "http://" + addr}} {
		if code, err := health(u.hc, u.url); code != 200 {
			t.Fatalf("%s/healthz before the drain: %d %v", u.url, code, err)
		}
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	var herr error
	if !testutil.WaitFor(30*time.Second, func() bool {
		code, err := health(uc, "http://airlock")
		herr = err
		return err != nil || code == 503
	}) || herr != nil {
		t.Fatalf("/healthz while draining: %v\n%s", herr, s.stderr)
	}
	if code, err := health(tc, "http://"+addr); code != 503 || err != nil {
		t.Fatalf("/healthz on TCP while draining: %d %v", code, err)
	}
	r, err := uc.Post("http://airlock/v1/run", "application/json", strings.NewReader(`{"argv":["true"]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 503 || !strings.Contains(string(b), `"retryable":true`) {
		t.Fatalf("a new run while draining: %d %s", r.StatusCode, b)
	}
	if len(testutil.HostProcsWith("sleep", marker)) != 1 {
		t.Fatal("the run in flight is gone before its client left")
	}
	cancel()
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, s.stderr)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("no exit once the last run ended\n%s", s.stderr)
	}
	s.done <- nil
	if left := testutil.HostProcsWith("sleep", marker); len(left) > 0 {
		t.Errorf("sandboxes left: %v", left)
	}
	if testutil.Exists(s.sock) {
		t.Error("socket left")
	}
}

// Issue 42, point 7: under `airlock serve --backend process` a served
// program runs as a host uid, rootless the very uid that owns serve's
// unix socket, so that only its filter keeps it from serve's API (and
// so from every other client's sessions). The program tries to connect
// to serve's socket and to start a run there; the verdict is the
// host's: serve's count of runs has only the program's own, while the
// same request from the host (the witness) adds one. (Not a session: a
// session is a live sandbox, which the process backend has not.) As root the program runs as
// uid 65534, which the socket's mode 0600 keeps out as well.
func TestServeProcessBackendSocket(t *testing.T) {
	py := testutil.RequireBinary(t, "python3")
	dir := serveDir(t)
	args := []string{"--backend", "process", "--pool", "0"}
	if !hostprobe.Probe(hostprobe.Options{NoCgroup: true}).Has(policy.CheckLandlockNet) {
		// The default net none needs Landlock's TCP rules (the cgroup v2
		// guest's 6.1 has none, nor scopes); the filter's socket gate is
		// on anyway.
		args = append(args, "--best-effort=network,landlock")
	}
	s := serve(t, dir, args...)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", s.sock)
	}}}
	defer hc.CloseIdleConnections()
	// Every tenant's runs (the program may run as another uid): the
	// airlock_runs_total counters, summed.
	runs := func() int {
		t.Helper()
		resp, err := hc.Get("http://airlock/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("metrics: %d %s", resp.StatusCode, b)
		}
		n := 0
		for _, m := range regexp.MustCompile(`(?m)^airlock_runs_total\{[^}]*\} ([0-9]+)$`).FindAllSubmatch(b, -1) {
			k, _ := strconv.Atoi(string(m[1]))
			n += k
		}
		return n
	}
	before := runs()
	c, err := client.New("unix:"+s.sock, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	probe := `import socket, sys
req = b"POST /v1/run HTTP/1.0\r\nHost: airlock\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n{\"argv\":[\"true\"]}"
try:
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.sendall(req)
    print("reached", s.recv(64))
except OSError as e:
    print("refused", e.errno)
`
	res, err := c.Execute(t.Context(), executor.Request{Args: []string{py, "-c", probe, s.sock}})
	if err != nil || res.Status != "ok" || res.Enforced.Backend != "process" {
		t.Fatalf("%v %+v\n%s", err, res, s.stderr)
	}
	t.Logf("inside: %s%s", res.Stdout, res.Stderr)
	mid := runs()
	if mid != before+1 {
		t.Errorf("the served program started a run on serve's own socket: %d runs, %d before its own", mid, before)
	}
	if !strings.HasPrefix(res.Stdout, "refused ") {
		t.Errorf("the served program's connect to serve's socket: %q, want refused", res.Stdout)
	}
	// The witness: the same request from the host opens a session.
	resp, err := hc.Post("http://airlock/v1/run", "application/json", strings.NewReader(`{"argv":["true"]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if after := runs(); resp.StatusCode/100 != 2 || after != mid+1 {
		t.Errorf("from the host: %d, %d runs (%d before): the check above proves nothing", resp.StatusCode, after, mid)
	}
}
