package executor_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

func liveExecutor(t *testing.T) *executor.Executor {
	t.Helper()
	testutil.RequireUserNS(t)
	ex, err := executor.New(executor.Config{WorkDir: testutil.WorldReadableDir(t), SpawnPath: testutil.RequireReaper(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Close() })
	return ex
}

// livePolicy is the default policy, with the limits degraded where this
// host gives the caller no cgroup (rootless on cgroup v1).
func livePolicy(ex *executor.Executor) policy.Policy {
	p := policy.Default()
	if !ex.Host().Has(policy.CheckCgroup) {
		p.BestEffort = policy.DegradeLimits
	}
	return p
}

func newLive(t *testing.T, ex *executor.Executor, cfg executor.SandboxConfig) *executor.Sandbox {
	t.Helper()
	s, err := ex.NewSandbox(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func run(t *testing.T, s *executor.Sandbox, cmd string) *executor.ProcessResult {
	t.Helper()
	res, err := s.Run(t.Context(), executor.ProcessRequest{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("%q: %v", cmd, err)
	}
	return res
}

// hostChildren are the host pids of the live sandbox's processes: pid
// 1's children, as the host sees them.
func hostChildren(t *testing.T, pid1 int) []int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid1, pid1))
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

// The capability, end to end: a dev server started in the background in
// one call serves files a later call writes, is reached from the host
// through Dial (and from inside by a later call), `sleep 1000 &` in a
// foreground command lives on across calls, and Close leaves nothing:
// no process (judged from the host), no cgroup.
func TestLiveSandboxDevServer(t *testing.T) {
	testutil.RequireBinary(t, "python3")
	ex := liveExecutor(t)
	s := newLive(t, ex, executor.SandboxConfig{Policy: livePolicy(ex), Files: map[string][]byte{"index.html": []byte("hello\n")}, Env: map[string]string{"GREETING": "hi"}})
	srv, err := s.Exec(t.Context(), executor.ProcessRequest{Command: "exec python3 -m http.server 8000 --bind 127.0.0.1", Tag: "web"})
	if err != nil {
		t.Fatal(err)
	}
	// A foreground call whose background child outlives it; the call
	// returns at its shell's end, with its output.
	res := run(t, s, "sleep 1000 & echo started $GREETING")
	if res.Status != nsjail.StatusOK || res.Stdout != "started hi\n" {
		t.Fatalf("background sleep: %+v", res)
	}
	// A later call reaches the server on the sandbox's loopback.
	var got *executor.ProcessResult
	for i := 0; i < 100; i++ {
		if got = run(t, s, `python3 -c 'import urllib.request as u; print(u.urlopen("http://127.0.0.1:8000/index.html").read().decode(), end="")'`); got.Status == nsjail.StatusOK {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got.Stdout != "hello\n" {
		t.Fatalf("from inside: %+v", got)
	}
	// The host, through Dial.
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return s.Dial(ctx, 8000) }}}
	resp, err := client.Get("http://sandbox/index.html")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "hello\n" {
		t.Fatalf("through Dial: %q", body)
	}
	// The server's log is its stderr, read from an offset.
	data, next, _, _ := srv.Output("stderr", 0)
	if !strings.Contains(string(data), "GET /index.html") || next != int64(len(data)) {
		t.Fatalf("server log: %q (next %d)", data, next)
	}
	if more, _, _, _ := srv.Output("stderr", next); len(more) != 0 {
		t.Fatalf("past the end: %q", more)
	}
	// The sleeper and the server are both there, pid 1's children.
	for _, p := range s.Processes() {
		if p.Tag == "web" && p.State != "running" {
			t.Fatalf("the server: %+v", p)
		}
	}
	if out := run(t, s, `for p in /proc/[0-9]*; do cat $p/comm; done`); !strings.Contains(out.Stdout, "sleep\n") {
		t.Fatalf("no sleep inside: %+v", out)
	}
	hostPid1 := s.HostPID()
	kids := hostChildren(t, hostPid1)
	if len(kids) < 2 {
		t.Fatalf("pid 1's children: %v", kids)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, k := range append(kids, hostPid1) {
		if err := syscall.Kill(k, 0); err == nil {
			t.Errorf("host pid %d lived past Close", k)
		}
	}
	if _, err := s.Run(t.Context(), executor.ProcessRequest{Command: "true"}, nil); !errors.Is(err, executor.ErrSandboxClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if info := s.Info(); info.State != "closed" {
		t.Fatalf("state: %+v", info)
	}
}

