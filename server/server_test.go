package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	client "github.com/airlock-sandbox/airlock/clients/go"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/server"
)

func TestMain(m *testing.M) {
	nsjail.Init()
	os.Exit(m.Run())
}

// env is a Server on a real unix socket, with a raw HTTP client and the
// Go client over it.
type env struct {
	srv  *server.Server
	ex   *executor.Executor
	hs   *http.Server
	sock string
	work string
	hc   *http.Client
	c    *client.Client
}

// start serves an executor (pool sandboxes prepared ahead) with cfg's
// settings; the cleanup drains, closes everything and checks that
// nothing is left.
func start(t *testing.T, pool int, mod func(*server.Config)) *env {
	t.Helper()
	return startWith(t, executor.Config{Pool: executor.PoolConfig{Size: pool, Refill: 1}}, mod)
}

// startWith is start with an executor configured as ec (its WorkDir is
// the test's).
func startWith(t *testing.T, ec executor.Config, mod func(*server.Config)) *env {
	t.Helper()
	testutil.RequireUserNS(t)
	e := &env{work: testutil.WorldReadableDir(t)}
	var err error
	ec.WorkDir = e.work
	e.ex, err = executor.New(ec)
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.Config{Executor: e.ex, MaxConcurrent: 2}
	if mod != nil {
		mod(&cfg)
	}
	if e.srv, err = server.New(cfg); err != nil {
		e.ex.Close()
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "airlock-serve-test-")
	if err != nil {
		t.Fatal(err)
	}
	e.sock = filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", e.sock)
	if err != nil {
		t.Fatal(err)
	}
	e.hs = &http.Server{Handler: e.srv.Handler(), ConnContext: server.ConnContext}
	go e.hs.Serve(ln)
	e.hc = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", e.sock)
	}}}
	if e.c, err = client.New("unix:"+e.sock, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		e.srv.Drain(ctx)
		e.hs.Shutdown(ctx)
		e.hc.CloseIdleConnections()
		e.c.Close()
		if err := e.ex.Close(); err != nil {
			t.Errorf("executor close: %v", err)
		}
		os.RemoveAll(dir)
		testutil.CheckNothingLeft(t, testutil.Left{Work: e.work})
	})
	return e
}

// do sends a raw request and returns the status, headers and body.
func (e *env) do(t *testing.T, method, path, body string, hdr ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, "http://airlock"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// errorOf decodes an error response.
func errorOf(t *testing.T, b []byte) policy.ErrorInfo {
	t.Helper()
	var eb struct {
		Error *policy.ErrorInfo `json:"error"`
	}
	if err := json.Unmarshal(b, &eb); err != nil || eb.Error == nil {
		t.Fatalf("not an error response: %s", b)
	}
	return *eb.Error
}

func resultOf(t *testing.T, b []byte) executor.Result {
	t.Helper()
	var res executor.Result
	if err := json.Unmarshal(b, &res); err != nil || res.Status == "" {
		t.Fatalf("not a result: %s", b)
	}
	return res
}

// metric returns the text of /metrics lines starting with prefix.
func (e *env) metric(t *testing.T, prefix string) string {
	t.Helper()
	_, _, b := e.do(t, "GET", "/metrics", "")
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestRunExecAndFiles(t *testing.T) {
	e := start(t, 1, nil)
	code, _, b := e.do(t, "POST", "/v1/run", `{"argv":["sh","-c","cat; echo err >&2; exit 3"],"stdin":"in\n","env":{"X":"1"}}`)
	if code != 200 {
		t.Fatalf("run: %d %s", code, b)
	}
	res := resultOf(t, b)
	if res.Status != nsjail.StatusExited || res.ExitCode != 3 || res.Stdout != "in\n" || res.Stderr != "err\n" {
		t.Fatalf("run result %+v", res)
	}
	code, _, b = e.do(t, "POST", "/v1/exec", `{"language":"python","code":"import os,sys,json\nprint(open('in.bin','rb').read().hex(), sys.argv[1:], os.environ['X'], json.load(open(os.environ['AIRLOCK_INPUT']))['k'])\nopen('out/o.txt','w').write('made') if os.makedirs('out') is None else 0",
		"args":["a"],"env":{"X":"y"},"input":{"k":7},"files":[{"name":"in.bin","content":"AAEC","encoding":"base64"}]}`)
	if code != 200 {
		t.Fatalf("exec: %d %s", code, b)
	}
	res = resultOf(t, b)
	if res.Status != nsjail.StatusOK || res.Stdout != "000102 ['a'] y 7\n" || res.Language != "python" {
		t.Fatalf("exec result %+v", res.Result)
	}
	if len(res.Files) != 1 || res.Files[0].Path != "out/o.txt" || string(res.Files[0].Data) != "made" {
		t.Fatalf("files out: %+v", res.Files)
	}
	// The Go client, the same through the executor's types.
	r2, err := e.c.Execute(t.Context(), executor.Request{Language: "bash", Code: `echo "$1 $(cat)"`, Argv: []string{"hi"}, Stdin: strings.NewReader("there")})
	if err != nil || r2.Stdout != "hi there\n" {
		t.Fatalf("client: %v %+v", err, r2)
	}
	if _, err := e.c.Execute(t.Context(), executor.Request{Args: []string{"true"}, Policy: policy.Policy{Workspace: "/"}}); !errors.Is(err, policy.ErrInvalid) {
		t.Fatalf("client sent a workspace: %v", err)
	}
}

func TestStream(t *testing.T) {
	e := start(t, 0, nil)
	code, hdr, b := e.do(t, "POST", "/v1/exec", `{"language":"sh","code":"echo one; printf '\\303'; sleep 0.1; printf '\\251\\n' >&1; echo two >&2; exit 4"}`, "Accept", "application/x-ndjson")
	if code != 200 || hdr.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("%d %v %s", code, hdr, b)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var out, errs string
	var res *executor.Result
	for _, l := range lines {
		var m struct {
			Stdout, Stderr *string
			Result         *executor.Result
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		switch {
		case m.Stdout != nil:
			out += *m.Stdout
		case m.Stderr != nil:
			errs += *m.Stderr
		case m.Result != nil:
			res = m.Result
		}
	}
	// The UTF-8 sequence split across two writes arrives whole.
	if out != "one\né\n" || errs != "two\n" || res == nil || res.Status != nsjail.StatusExited || res.ExitCode != 4 {
		t.Fatalf("stdout %q stderr %q result %+v\n%s", out, errs, res, b)
	}
	if !strings.HasPrefix(lines[len(lines)-1], `{"result":`) {
		t.Fatalf("last line %q", lines[len(lines)-1])
	}
	// Past max_output the stream is cut and the run killed: output_limit.
	code, _, b = e.do(t, "POST", "/v1/run", `{"argv":["sh","-c","while :; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done"],"policy":{"max_output":"64KiB"}}`, "Accept", "application/x-ndjson")
	last := b[bytes.LastIndexByte(bytes.TrimSpace(b), '\n')+1:]
	var end struct{ Result *executor.Result }
	if code != 200 || json.Unmarshal(last, &end) != nil || end.Result == nil || end.Result.Status != nsjail.StatusOutputLimit || !end.Result.StdoutTruncated {
		t.Fatalf("flood: %d %s", code, last)
	}
	if n := len(b); n > 200<<10 {
		t.Fatalf("flood streamed %d bytes past a 64 KiB cap", n)
	}
	// A refusal before any output keeps its status.
	code, _, b = e.do(t, "POST", "/v1/run", `{"argv":["/no/such"]}`, "Accept", "application/x-ndjson")
	if code == 200 || !strings.Contains(string(b), `"error"`) {
		t.Fatalf("refused stream: %d %s", code, b)
	}
	// The Go client streams into writers.
	var so, se bytes.Buffer
	r, err := e.c.Execute(t.Context(), executor.Request{Args: []string{"sh", "-c", "echo o; echo e >&2"}, Stdout: &so, Stderr: &se})
	if err != nil || r.Status != nsjail.StatusOK || so.String() != "o\n" || se.String() != "e\n" {
		t.Fatalf("client stream: %v %+v %q %q", err, r, so.String(), se.String())
	}
}

// A client that goes away mid-stream kills its run.
func TestDisconnectKillsRun(t *testing.T) {
	e := start(t, 0, nil)
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://airlock/v1/run", strings.NewReader(`{"argv":["sh","-c","while :; do echo tick; sleep 0.05; done"]}`))
	req.Header.Set("Accept", "application/x-ndjson")
	resp, err := e.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "{\"stdout\":\"tick\\n\"}\n" {
		t.Fatalf("first line %q %v", line, err)
	}
	if len(testutil.Children()) == 0 {
		t.Fatal("no sandbox running")
	}
	cancel()
	resp.Body.Close()
	if !testutil.WaitFor(10*time.Second, func() bool { return len(testutil.Children()) == 0 }) {
		t.Fatalf("sandbox still running after the client left: %v", testutil.Children())
	}
	if !testutil.WaitFor(10*time.Second, func() bool { return e.metric(t, "airlock_running ") == "airlock_running 0" }) {
		t.Fatalf("slot not released: %s", e.metric(t, "airlock_running"))
	}
	// Not streaming: the same once the request is read.
	ctx, cancel = context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := e.c.Execute(ctx, executor.Request{Args: []string{"sleep", "31.25"}})
		done <- err
	}()
	if !testutil.WaitFor(10*time.Second, func() bool { return len(testutil.HostProcsWith("sleep", "31.25")) > 0 }) {
		t.Fatal("no sandbox running")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("client: %v", err)
	}
	if !testutil.WaitFor(10*time.Second, func() bool { return len(testutil.Children()) == 0 }) {
		t.Fatalf("sandbox still running after the client left: %v", testutil.Children())
	}
}

// Each refused request gets a 4xx naming the field, and nothing runs.
func TestRefusalsRunNothing(t *testing.T) {
	e := start(t, 1, func(c *server.Config) { c.MaxRequest = 4096 })
	huge := `{"argv":["true"],"stdin":"` + strings.Repeat("a", 8192) + `"}`
	cases := []struct {
		name, path, body string
		status           int
		field            string
	}{
		{"malformed", "/v1/run", `{"argv":["true"`, 400, "body"},
		{"not an object", "/v1/run", `[1]`, 400, "body"},
		{"empty", "/v1/run", ``, 400, "body"},
		{"trailing", "/v1/run", `{"argv":["true"]} {}`, 400, "body"},
		{"wrong type argv", "/v1/run", `{"argv":"true"}`, 400, "argv"},
		{"wrong type stdin", "/v1/run", `{"argv":["true"],"stdin":5}`, 400, "stdin"},
		{"wrong type timeout", "/v1/run", `{"argv":["true"],"policy":{"timeout":true}}`, 400, "policy.timeout"},
		{"wrong type memory", "/v1/exec", `{"language":"bash","code":"true","policy":{"memory":[1]}}`, 400, "policy.memory"},
		{"no argv", "/v1/run", `{}`, 400, "argv"},
		{"nul in argv", "/v1/run", `{"argv":["a\u0000b"]}`, 400, "argv"},
		{"unknown field", "/v1/run", `{"argv":["true"],"bogus":1}`, 400, "bogus"},
		{"policy field a request may not set", "/v1/run", `{"argv":["true"],"policy":{"mounts":[]}}`, 400, "mounts"},
		{"top-level workspace", "/v1/run", `{"argv":["true"],"workspace":"/"}`, 400, "workspace"},
		{"loosening memory", "/v1/run", `{"argv":["true"],"policy":{"memory":"1GiB"}}`, 400, "policy.memory"},
		{"loosening net", "/v1/run", `{"argv":["true"],"policy":{"net":"host"}}`, 400, "policy.net"},
		{"bad env", "/v1/run", `{"argv":["true"],"env":{"A=B":"c"}}`, 400, "env"},
		{"bad stdin encoding", "/v1/run", `{"argv":["true"],"stdin":"x","stdin_encoding":"rot13"}`, 400, "stdin encoding"},
		{"huge body", "/v1/run", huge, 413, "body"},
		{"unknown language", "/v1/exec", `{"language":"cobol","code":"x"}`, 400, "language"},
		{"no language", "/v1/exec", `{"code":"x"}`, 400, "language"},
		{"bad file name", "/v1/exec", `{"language":"sh","code":"true","files":[{"name":"../x","content":""}]}`, 400, "file name"},
		{"bad base64", "/v1/exec", `{"language":"sh","code":"true","files":[{"name":"x","content":"!!","encoding":"base64"}]}`, 400, "files[0].content"},
		{"unknown route", "/v1/nope", `{}`, 404, "path"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, hdr, b := e.do(t, "POST", c.path, c.body)
			if code != c.status {
				t.Fatalf("status %d, want %d: %s", code, c.status, b)
			}
			info := errorOf(t, b)
			if info.Class != policy.ClassInvalid || info.Retryable || info.Field != c.field || info.Message == "" || hdr.Get("Retry-After") != "" {
				t.Fatalf("error %+v, want class invalid, field %q, not retryable", info, c.field)
			}
		})
	}
	if m := e.metric(t, "airlock_runs_total"); m != "" {
		t.Fatalf("something ran: %s", m)
	}
	if m := e.metric(t, "airlock_pool_hits_total"); m != "airlock_pool_hits_total 0" {
		t.Fatalf("the pool served a refused request: %s", m)
	}
	// Every refusal is counted, once, as invalid.
	want := fmt.Sprintf("airlock_rejections_total{reason=\"invalid\"} %d", len(cases))
	if m := e.metric(t, "airlock_rejections_total"); m != want {
		t.Fatalf("rejections: %q, want %q", m, want)
	}
	if m := e.metric(t, "airlock_errors_total"); m != fmt.Sprintf("airlock_errors_total{class=\"invalid\"} %d", len(cases)) {
		t.Fatalf("errors: %q, want %d invalid", m, len(cases))
	}
}

func TestToken(t *testing.T) {
	e := start(t, 0, nil)
	h, err := server.RequireToken("0123456789abcdef-token", e.srv.Handler())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	go hs.Serve(ln)
	defer hs.Close()
	url := "http://" + ln.Addr().String()
	for _, c := range []struct {
		auth   string
		status int
	}{{"", 401}, {"Bearer wrong", 401}, {"bearer wrong", 401}, {"Basic MDEyMzQ1Njc4OWFiY2RlZi10b2tlbg==", 401},
		{"Bearer0123456789abcdef-token", 401}, {"Bearer 0123456789abcdef-token ", 200}, {"Bearer 0123456789abcdef-tokenx", 401},
		// The scheme is case-insensitive (RFC 7235, 2.1), the token is not.
		{"Bearer 0123456789abcdef-token", 200}, {"bearer 0123456789abcdef-token", 200}, {"BEARER 0123456789abcdef-token", 200},
		{"Bearer 0123456789ABCDEF-token", 401}} {
		req, _ := http.NewRequest("POST", url+"/v1/run", strings.NewReader(`{"argv":["true"]}`))
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Fatalf("auth %q: %d, want %d: %s", c.auth, resp.StatusCode, c.status, b)
		}
		if c.status == 401 {
			if info := errorOf(t, b); info.Field != "authorization" || info.Retryable {
				t.Fatalf("auth %q: %+v", c.auth, info)
			}
		}
	}
	if m := e.metric(t, `airlock_runs_total{kind="run",status="ok"}`); m != `airlock_runs_total{kind="run",status="ok"} 4` {
		t.Fatalf("runs: %q, want exactly the 4 authorized ones", m)
	}
	if _, err := server.RequireToken(" ", e.srv.Handler()); !errors.Is(err, policy.ErrInvalid) {
		t.Fatalf("empty token: %v", err)
	}
}

// Past MaxConcurrent + MaxQueue a request is refused at once: 429,
// retryable, Retry-After.
func TestBusy(t *testing.T) {
	e := start(t, 0, func(c *server.Config) { c.MaxConcurrent, c.MaxQueue = 1, -1 })
	// The first run holds the slot until the requests below are refused
	// (a 2 s sleep could end first in the loaded emulated guest), then
	// is cancelled.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.c.Execute(ctx, executor.Request{Args: []string{"sleep", "60"}})
	}()
	if !testutil.WaitFor(10*time.Second, func() bool { return e.metric(t, "airlock_running ") == "airlock_running 1" }) {
		t.Fatal("the first run never started")
	}
	code, hdr, b := e.do(t, "POST", "/v1/run", `{"argv":["true"]}`)
	info := errorOf(t, b)
	if code != 429 || hdr.Get("Retry-After") == "" || !info.Retryable || info.Class != policy.ClassUnavailable {
		t.Fatalf("busy: %d %v %+v", code, hdr, info)
	}
	_, err := e.c.Execute(t.Context(), executor.Request{Args: []string{"true"}})
	if !errors.Is(err, policy.ErrUnavailable) {
		t.Fatalf("client: %v, want ErrUnavailable", err)
	}
	cancel()
	<-done
	if m := e.metric(t, "airlock_rejections_total"); m != `airlock_rejections_total{reason="busy"} 2` {
		t.Fatalf("rejections: %q, want the two busy ones", m)
	}
}

// A request past MaxConcurrent waits in the queue, which the queue gauge
// (the autoscaling signal) shows; a warm pool's hits and its size are
// counted.
func TestQueueAndPoolMetrics(t *testing.T) {
	e := start(t, 1, func(c *server.Config) { c.MaxConcurrent, c.MaxQueue = 1, 1 })
	if !testutil.WaitFor(10*time.Second, func() bool { return e.metric(t, "airlock_pool_ready") == "airlock_pool_ready 1" }) {
		t.Fatalf("the pool never filled: %q", e.metric(t, "airlock_pool_ready"))
	}
	first := make(chan error, 1)
	go func() {
		// 3 s: the second request must be queued, and seen queued, before
		// it ends, in the loaded emulated guest too.
		_, err := e.c.Execute(context.Background(), executor.Request{Args: []string{"sleep", "3"}})
		first <- err
	}()
	if !testutil.WaitFor(10*time.Second, func() bool { return e.metric(t, "airlock_running ") == "airlock_running 1" }) {
		t.Fatal("the first run never started")
	}
	second := make(chan error, 1)
	go func() {
		_, err := e.c.Execute(context.Background(), executor.Request{Args: []string{"true"}})
		second <- err
	}()
	if !testutil.WaitFor(10*time.Second, func() bool { return e.metric(t, "airlock_queue_length") == "airlock_queue_length 1" }) {
		t.Fatalf("the second request is not queued: %q", e.metric(t, "airlock_queue_length"))
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if m := e.metric(t, "airlock_queue_length"); m != "airlock_queue_length 0" {
		t.Fatalf("queue after both ran: %q", m)
	}
	if m := e.metric(t, `airlock_runs_total{kind="run",status="ok"}`); m != `airlock_runs_total{kind="run",status="ok"} 2` {
		t.Fatalf("runs: %q", m)
	}
	// The first run took the prepared sandbox; the second came before
	// the refill (one at a time) or after it: one or two hits.
	if m := e.metric(t, "airlock_pool_hits_total"); m != "airlock_pool_hits_total 1" && m != "airlock_pool_hits_total 2" {
		t.Fatalf("pool hits: %q", m)
	}
	if m := e.metric(t, "airlock_rejections_total"); m != "" {
		t.Fatalf("a queued request was rejected: %q", m)
	}
}

func TestSessions(t *testing.T) {
	e := start(t, 0, func(c *server.Config) { c.MaxSessions = 2 })
	ctx := t.Context()
	s, err := e.c.NewSession(ctx, client.SessionConfig{Policy: policy.Policy{Setenv: map[string]string{"GREETING": "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteFile(ctx, "dir/in.txt", []byte("uploaded")); err != nil {
		t.Fatal(err)
	}
	res, err := s.Execute(ctx, executor.Request{Language: "sh", Code: `cat dir/in.txt; echo " $GREETING"; echo state > kept`})
	if err != nil || res.Stdout != "uploaded hi\n" {
		t.Fatalf("exec: %v %+v", err, res)
	}
	res, err = s.Execute(ctx, executor.Request{Args: []string{"cat", "kept"}})
	if err != nil || res.Stdout != "state\n" {
		t.Fatalf("state across runs: %v %+v", err, res)
	}
	if data, err := s.ReadFile(ctx, "kept"); err != nil || string(data) != "state\n" {
		t.Fatalf("download: %q %v", data, err)
	}
	files, err := s.Files(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Path)
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "dir/in.txt") || !strings.Contains(got, "kept") {
		t.Fatalf("files %v", names)
	}
	// A link planted by the program is not followed on download.
	s.Execute(ctx, executor.Request{Args: []string{"ln", "-s", "/etc/passwd", "link"}})
	if _, err := s.ReadFile(ctx, "link"); !errors.Is(err, policy.ErrInvalid) {
		t.Fatalf("download through a link: %v", err)
	}
	if _, err := s.ReadFile(ctx, "../../etc/passwd"); err == nil {
		t.Fatal("download outside the workspace")
	}
	code, _, b := e.do(t, "POST", "/v1/sessions/"+s.ID+"/run", `{"argv":["true"],"policy":{"timeout":"1s"}}`)
	if code != 400 || errorOf(t, b).Field != "policy" {
		t.Fatalf("per-run policy in a session: %d %s", code, b)
	}
	// The cap, then an idle timeout frees a place.
	s2, err := e.c.NewSession(ctx, client.SessionConfig{IdleTimeout: policy.Duration(300 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.NewSession(ctx, client.SessionConfig{}); !errors.Is(err, policy.ErrUnavailable) {
		t.Fatalf("past the cap: %v", err)
	}
	code, _, b = e.do(t, "GET", "/v1/sessions", "")
	if code != 200 || strings.Count(string(b), `"id"`) != 2 {
		t.Fatalf("list: %d %s", code, b)
	}
	// Polled by listing: a file request would count as activity.
	if !testutil.WaitFor(10*time.Second, func() bool {
		_, _, b := e.do(t, "GET", "/v1/sessions", "")
		return !strings.Contains(string(b), s2.ID)
	}) {
		t.Fatal("idle session still open")
	}
	if _, err := s2.Files(ctx); !errors.Is(err, policy.ErrInvalid) || err.(*client.Error).Status != 404 {
		t.Fatalf("idle-closed session: %v", err)
	}
	code, _, b = e.do(t, "POST", "/v1/sessions", `{"idle_timeout":"100h"}`)
	if code != 400 || errorOf(t, b).Field != "idle_timeout" {
		t.Fatalf("idle above the maximum: %d %s", code, b)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Execute(ctx, executor.Request{Args: []string{"true"}}); err == nil || err.(*client.Error).Status != 404 {
		t.Fatalf("closed session: %v", err)
	}
}

func TestCapabilitiesHealth(t *testing.T) {
	e := start(t, 0, func(c *server.Config) { c.Policy.Timeout = policy.Duration(5 * time.Second) })
	caps, err := e.c.Capabilities(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	limits := caps["limits"].(map[string]any)
	if limits["timeout"] != "5s" || limits["memory"].(float64) != policy.DefaultMemory {
		t.Fatalf("limits %v", limits)
	}
	langs := fmt.Sprint(caps["languages"])
	if !strings.Contains(langs, "name:python") || !strings.Contains(langs, "version:3.") {
		t.Fatalf("languages %s", langs)
	}
	if code, _, _ := e.do(t, "GET", "/healthz", ""); code != 200 {
		t.Fatalf("healthz %d", code)
	}
	code, hdr, b := e.do(t, "GET", "/v1/run", "")
	if info := errorOf(t, b); code != 405 || hdr.Get("Allow") != "POST" || info.Field != "method" {
		t.Fatalf("wrong method: %d %v %+v", code, hdr, info)
	}
}
