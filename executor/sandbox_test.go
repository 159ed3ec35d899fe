package executor_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

func liveExecutor(t testing.TB) *executor.Executor {
	t.Helper()
	testutil.RequireUserNS(t)
	// As serve runs them: a cgo-free init and the spawn helper (the test
	// binary has no build token: scripts/testlib.sh builds this init without).
	ex, err := executor.New(executor.Config{WorkDir: testutil.WorldReadableDir(t), SpawnPath: testutil.RequireReaper(t), InitPath: filepath.Join(testutil.BinDir(t), "airlock-init-plain")})
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
	if !ex.Host().Has(policy.CheckCgroup) && !testutil.ExpectCgroups() {
		// Rootless on cgroup v1 only: where a cgroup is expected (root,
		// a delegated one) the limits are enforced or the test fails.
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

// Every process that enters runs under the confinement of the first,
// judged from the host: the same seccomp mode and no_new_privs, no
// capability, the same cgroup and namespaces as pid 1, and the ids the
// sandbox maps.
func TestLiveSandboxConfinement(t *testing.T) {
	ex := liveExecutor(t)
	s := newLive(t, ex, executor.SandboxConfig{Policy: livePolicy(ex)})
	if _, err := s.Exec(t.Context(), executor.ProcessRequest{Argv: []string{"sleep", "1000"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Exec(t.Context(), executor.ProcessRequest{Command: "sleep 1000"}); err != nil {
		t.Fatal(err)
	}
	pid1 := s.HostPID()
	kids := hostChildren(t, pid1)
	if len(kids) != 2 {
		t.Fatalf("pid 1's children: %v", kids)
	}
	field := func(pid int, name string) string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && k == name {
				return strings.TrimSpace(v)
			}
		}
		t.Fatalf("no %s in /proc/%d/status", name, pid)
		return ""
	}
	link := func(pid int, ns string) string {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	cg := func(pid int) string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, k := range kids {
		for _, f := range []string{"CapEff", "CapPrm", "CapInh", "CapBnd", "CapAmb"} {
			if v := field(k, f); strings.Trim(v, "0") != "" {
				t.Errorf("pid %d: %s %s", k, f, v)
			}
		}
		if field(k, "Seccomp") != "2" || field(k, "NoNewPrivs") != "1" {
			t.Errorf("pid %d: Seccomp %s NoNewPrivs %s", k, field(k, "Seccomp"), field(k, "NoNewPrivs"))
		}
		if field(k, "Uid") != field(pid1, "Uid") || strings.Fields(field(k, "Uid"))[0] == "0" {
			t.Errorf("pid %d: uid %s, pid 1's %s", k, field(k, "Uid"), field(pid1, "Uid"))
		}
		for _, ns := range []string{"user", "pid", "mnt", "net", "ipc", "uts", "cgroup"} {
			if link(k, ns) != link(pid1, ns) || link(k, ns) == link(os.Getpid(), ns) {
				t.Errorf("pid %d: %s namespace %s (pid 1 %s, host %s)", k, ns, link(k, ns), link(pid1, ns), link(os.Getpid(), ns))
			}
		}
		if cg(k) != cg(pid1) {
			t.Errorf("pid %d: cgroup %q, pid 1's %q", k, cg(k), cg(pid1))
		}
	}
	// From inside: a process cannot leave (no new namespace, no mount,
	// no cgroup move: its cgroup namespace's root is all it sees).
	res := run(t, s, `unshare -U true 2>&1; echo "unshare=$?"; echo 0 > /sys/fs/cgroup/cgroup.procs 2>&1; echo "move=$?"`)
	if !strings.Contains(res.Stdout, "unshare=1") || strings.Contains(res.Stdout, "move=0") {
		t.Fatalf("escape attempts: %+v", res)
	}
}

// Two sandboxes cannot see or signal each other's processes.
func TestLiveSandboxesApart(t *testing.T) {
	ex := liveExecutor(t)
	a := newLive(t, ex, executor.SandboxConfig{Policy: livePolicy(ex)})
	b := newLive(t, ex, executor.SandboxConfig{Policy: livePolicy(ex)})
	pb, err := b.Exec(t.Context(), executor.ProcessRequest{Argv: []string{"sleep", "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	host := hostChildren(t, b.HostPID())[0]
	// (b's pid numbers name a's own processes in a: both namespaces
	// count alike. The host pid names nothing there.)
	res := run(t, a, fmt.Sprintf("kill -9 %d; for p in /proc/[0-9]*; do cat $p/comm; done", host))
	// (Its own /proc: its pid 1, named by the fd it was exec'd from, and
	// this shell.)
	if strings.Contains(res.Stdout, "sleep") || !strings.Contains(res.Stdout, "sh\n") {
		t.Fatalf("inside a: %+v", res)
	}
	select {
	case <-pb.Done():
		t.Fatal("sandbox a killed b's process")
	case <-time.After(100 * time.Millisecond):
	}
	if err := syscall.Kill(host, 0); err != nil {
		t.Fatalf("b's sleeper: %v", err)
	}
}

// A pty: an interactive bash answers, and resizes reach it.
func TestLiveSandboxPTY(t *testing.T) {
	testutil.RequireBinary(t, "bash")
	ex := liveExecutor(t)
	s := newLive(t, ex, executor.SandboxConfig{Policy: livePolicy(ex)})
	p, err := s.Exec(t.Context(), executor.ProcessRequest{Argv: []string{"bash", "--norc", "-i"}, TTY: &executor.TTYSize{Rows: 30, Cols: 100}})
	if err != nil {
		t.Fatal(err)
	}
	// Its terminal is one of the sandbox's own devpts: named inside.
	p.Write([]byte("echo $((6*7)); stty size; tty\n"))
	var seen string
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(seen, "42\r\n") || !strings.Contains(seen, "30 100") || !strings.Contains(seen, "\r\n/dev/pts/") {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal said %q", seen)
		}
		data, _, _, _ := p.Output("stdout", 0)
		seen = string(data)
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.Resize(40, 120); err != nil {
		t.Fatal(err)
	}
	p.Write([]byte("stty size; exit 7\n"))
	res, err := p.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != nsjail.StatusExited || res.ExitCode != 7 || !strings.Contains(res.Stdout, "40 120") {
		t.Fatalf("bash on a pty: %+v", res)
	}
}

// Processes: stdin as a stream, a signal, a kill, a timeout, a missing
// program; each outcome a Result status.
func TestLiveSandboxProcesses(t *testing.T) {
	ex := liveExecutor(t)
	s := newLive(t, ex, executor.SandboxConfig{Policy: livePolicy(ex)})
	cat, err := s.Exec(t.Context(), executor.ProcessRequest{Argv: []string{"cat"}, Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	cat.Write([]byte("one "))
	cat.Write([]byte("two"))
	cat.CloseStdin()
	res, err := cat.Wait(t.Context())
	if err != nil || res.Status != nsjail.StatusOK || res.Stdout != "one two" {
		t.Fatalf("cat: %+v %v", res, err)
	}
	trap, err := s.Exec(t.Context(), executor.ProcessRequest{Command: `trap 'echo term; exit 5' TERM; echo ready; while :; do sleep 0.05; done`})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if d, _, _, _ := trap.Output("stdout", 0); string(d) == "ready\n" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	trap.Signal(syscall.SIGTERM)
	if res, _ := trap.Wait(t.Context()); res.Status != nsjail.StatusExited || res.ExitCode != 5 || res.Stdout != "ready\nterm\n" {
		t.Fatalf("trap: %+v", res)
	}
	sl, _ := s.Exec(t.Context(), executor.ProcessRequest{Argv: []string{"sleep", "1000"}})
	sl.Kill()
	if res, _ := sl.Wait(t.Context()); res.Status != nsjail.StatusSignaled || res.Signal != "SIGKILL" || res.ExitCode != 137 {
		t.Fatalf("killed: %+v", res)
	}
	res, err = s.Run(t.Context(), executor.ProcessRequest{Argv: []string{"sleep", "1000"}, Timeout: 200 * time.Millisecond}, nil)
	if err != nil || res.Status != nsjail.StatusTimeout {
		t.Fatalf("timeout: %+v %v", res, err)
	}
	if _, err := s.Exec(t.Context(), executor.ProcessRequest{Argv: []string{"no-such-program"}}); err == nil || policy.Describe(err).Class != policy.ClassInvalid {
		t.Fatalf("a missing program: %v", err)
	}
	res, err = s.Run(t.Context(), executor.ProcessRequest{Command: "cat; echo $?", Env: map[string]string{"X": "y"}}, []byte("given"))
	if err != nil || res.Stdout != "given0\n" {
		t.Fatalf("stdin given: %+v %v", res, err)
	}
	// The sandbox lived through all of it.
	if res := run(t, s, "echo alive"); res.Stdout != "alive\n" {
		t.Fatalf("after: %+v", res)
	}
	if n := len(s.Processes()); n != 6 {
		t.Fatalf("processes listed: %d: %+v", n, s.Processes())
	}
}

// The workspace: bounded (ENOSPC past workspace_size, inside and
// through the file API), code never written over a user's file, uploaded
// directories owned by the sandbox's user, files of any size both ways,
// no link followed out.
func TestLiveSandboxFiles(t *testing.T) {
	testutil.RequireBinary(t, "python3")
	ex := liveExecutor(t)
	p := livePolicy(ex)
	p.WorkspaceSize = 32 << 20
	s := newLive(t, ex, executor.SandboxConfig{Policy: p})
	if _, err := s.WriteFile("main.py", strings.NewReader("USER FILE\n"), 0); err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(t.Context(), executor.ProcessRequest{Language: "python", Code: "print(open('main.py').read(), end='')"}, nil)
	if err != nil || res.Stdout != "USER FILE\n" {
		t.Fatalf("code over a user's file: %+v %v", res, err)
	}
	if _, err := s.WriteFile("dir/sub/a.txt", strings.NewReader("a"), 0); err != nil {
		t.Fatal(err)
	}
	if res := run(t, s, "echo b > dir/b.txt && echo c > dir/sub/c.txt && stat -c %u dir dir/sub dir/sub/a.txt | sort -u"); res.Status != nsjail.StatusOK || strings.Count(res.Stdout, "\n") != 1 {
		t.Fatalf("uploaded dirs: %+v", res)
	}
	// 20 MiB up and down, whole.
	big := strings.Repeat("0123456789abcdef", 20<<16)
	if n, err := s.WriteFile("big.bin", strings.NewReader(big), 0); err != nil || n != int64(len(big)) {
		t.Fatal(n, err)
	}
	if res := run(t, s, "wc -c < big.bin"); strings.TrimSpace(res.Stdout) != strconv.Itoa(len(big)) {
		t.Fatalf("big inside: %+v", res)
	}
	rc, fi, err := s.OpenFile("big.bin")
	if err != nil || fi.Size() != int64(len(big)) {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if string(got) != big {
		t.Fatal("big.bin came back different")
	}
	// Past the bound: ENOSPC inside; the API's write is refused.
	res = run(t, s, "dd if=/dev/zero of=fill bs=1M count=64 2>&1; echo rc=$?")
	if !strings.Contains(res.Stdout, "No space left") {
		t.Fatalf("filling the workspace: %+v", res)
	}
	if _, err := s.WriteFile("more.bin", strings.NewReader(big), 0); err == nil || policy.Describe(err).Field != "workspace_size" {
		t.Fatalf("writing past the bound: %v", err)
	}
	if u := s.Info().Workspace; u.Limit != 32<<20 || u.Used < 30<<20 {
		t.Fatalf("usage: %+v", u)
	}
	// A link out is never followed.
	run(t, s, "rm -f fill; ln -s /etc/passwd passwd; ln -s / root")
	if _, _, err := s.OpenFile("passwd"); err == nil {
		t.Fatal("opened a link to /etc/passwd")
	}
	if _, err := s.WriteFile("root/tmp/x", strings.NewReader("x"), 0); err == nil {
		t.Fatal("wrote through a link to /")
	}
	if _, _, err := s.OpenFile("root/etc/hostname"); err == nil {
		t.Fatal("read through a link to /")
	}
	ls, err := s.ListDir(".", 2)
	if err != nil || len(ls) < 6 {
		t.Fatalf("list: %v %+v", err, ls)
	}
	if err := s.Rename("big.bin", "dir/big.bin"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("dir"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat("dir/big.bin"); err == nil {
		t.Fatal("removed dir still there")
	}
	fl, err := s.Files(executor.FileLimits{MaxFiles: 1})
	if err != nil || len(fl.Files) != 1 || fl.Omitted != fl.Total-1 || fl.Total < 3 {
		t.Fatalf("files: %+v %v", fl, err)
	}
}

// One memory limit for the whole sandbox: two processes of 300 MiB each
// under 512 MiB cannot both have it.
func TestLiveSandboxMemory(t *testing.T) {
	testutil.RequireBinary(t, "python3")
	ex := liveExecutor(t)
	if !ex.Host().Has(policy.CheckCgroup) {
		if testutil.ExpectCgroups() {
			t.Fatal("root or a delegated cgroup, yet the host check finds no usable cgroup")
		}
		t.Skip("no cgroup for this user here (rootless on cgroup v1): a sandbox-wide memory limit needs one; this test runs as root")
	}
	p := livePolicy(ex)
	p.Memory = 512 << 20
	s := newLive(t, ex, executor.SandboxConfig{Policy: p})
	hog := `import time; b = bytearray(300 << 20); b[::4096] = b"x" * len(b[::4096]); print("held", flush=True); time.sleep(1000)`
	a, err := s.Exec(t.Context(), executor.ProcessRequest{Argv: []string{"python3", "-c", hog}})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if d, _, _, _ := a.Output("stdout", 0); string(d) == "held\n" {
			break
		}
		select {
		case <-a.Done():
			t.Fatalf("the first: %+v", a.Info())
		case <-time.After(20 * time.Millisecond):
		}
	}
	// The second takes its 300 MiB and ends: it cannot, or the first
	// is the one the OOM killer takes.
	res, err := s.Run(t.Context(), executor.ProcessRequest{Argv: []string{"python3", "-c", strings.Replace(hog, "time.sleep(1000)", "pass", 1)}, Timeout: 60 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status == nsjail.StatusOK {
		<-a.Done() // killed: its end is being reported
	}
	first := a.Info()
	if res.Status != nsjail.StatusMemoryLimit && first.Status != string(nsjail.StatusMemoryLimit) {
		t.Fatalf("both held 300 MiB under 512: second %+v, first %+v", res, first)
	}
	// The kill took one process, not the sandbox (cgroup v2's
	// memory.oom.group is off for a live sandbox's group).
	if res := run(t, s, "echo alive"); res.Stdout != "alive\n" {
		t.Fatalf("after the memory kill: %+v (sandbox: %v)", res, s.Err())
	}
}

// Idle timeout and lifetime end a sandbox, with what ended it.
func TestLiveSandboxTimeouts(t *testing.T) {
	ex := liveExecutor(t)
	idle := newLive(t, ex, executor.SandboxConfig{Policy: livePolicy(ex), IdleTimeout: 300 * time.Millisecond})
	life := newLive(t, ex, executor.SandboxConfig{Policy: livePolicy(ex), IdleTimeout: -1, Timeout: time.Hour})
	pid := life.HostPID()
	if err := life.SetTimeout(300 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		s    *executor.Sandbox
		want error
	}{{idle, executor.ErrSandboxIdle}, {life, executor.ErrSandboxTimeout}} {
		select {
		case <-c.s.Done():
		case <-time.After(20 * time.Second):
			t.Fatal("still open")
		}
		if !errors.Is(c.s.Err(), c.want) {
			t.Fatalf("ended by %v, want %v", c.s.Err(), c.want)
		}
	}
	if syscall.Kill(pid, 0) == nil {
		t.Fatal("pid 1 outlived the lifetime")
	}
	if ex.Sandbox(life.ID()) != nil || len(ex.Sandboxes()) != 0 {
		t.Fatal("ended sandboxes still listed")
	}
}

// MaxProcesses holds: of ten starts at once, foreground and background,
// two run and eight are refused as a transient shortage; a place frees
// once a process ends.
func TestLiveSandboxMaxProcesses(t *testing.T) {
	ex := liveExecutor(t)
	s := newLive(t, ex, executor.SandboxConfig{Policy: livePolicy(ex), MaxProcesses: 2})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errs := make(chan error, 10)
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			req := executor.ProcessRequest{Argv: []string{"sleep", "1000"}}
			if i%2 == 0 {
				_, err := s.Exec(ctx, req)
				errs <- err
				return
			}
			_, err := s.Run(ctx, req, nil) // runs until cancelled, or refused at once
			if !errors.Is(err, executor.ErrSandboxFull) {
				err = nil
			}
			errs <- err
		})
	}
	deadline := time.After(20 * time.Second)
	for full := 0; full < 8; {
		select {
		case err := <-errs:
			if errors.Is(err, executor.ErrSandboxFull) {
				if !errors.Is(err, policy.ErrUnavailable) {
					t.Fatalf("%v is not a transient shortage", err)
				}
				full++
			} else if err != nil {
				t.Fatal(err)
			}
		case <-deadline:
			t.Fatalf("%d starts refused, want 8 (processes: %v)", full, s.Processes())
		}
	}
	if !testutil.WaitFor(20*time.Second, func() bool { return len(s.Processes()) == 2 }) {
		t.Fatalf("%d processes, want the 2 admitted", len(s.Processes()))
	}
	for _, p := range s.Processes() {
		if q := s.Process(p.PID); q != nil {
			q.Kill()
		}
	}
	if !testutil.WaitFor(20*time.Second, func() bool {
		p, err := s.Exec(ctx, executor.ProcessRequest{Argv: []string{"true"}})
		return err == nil && p != nil
	}) {
		t.Fatal("no place once the processes ended")
	}
	cancel()
	wg.Wait()
}

// A Hold keeps a sandbox from idling out however long nothing touches
// it; its release starts the idle timeout anew, which then ends it.
func TestLiveSandboxHold(t *testing.T) {
	ex := liveExecutor(t)
	s := newLive(t, ex, executor.SandboxConfig{Policy: livePolicy(ex), IdleTimeout: 200 * time.Millisecond})
	release := s.Hold()
	second := s.Hold()
	second()
	second() // once only: the first hold still holds
	select {
	case <-s.Done():
		t.Fatalf("idled out while held: %v", s.Err())
	case <-time.After(time.Second): // five idle timeouts
	}
	release()
	select {
	case <-s.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("still open after the release")
	}
	if !errors.Is(s.Err(), executor.ErrSandboxIdle) {
		t.Fatalf("ended by %v, want the idle timeout", s.Err())
	}
}

// Close while the idle timeout's teardown is under way returns once it
// is over: pid 1 is gone and nothing is left of the sandbox's cgroup
// (the Executor's Close relies on it).
func TestLiveSandboxCloseWaitsForTeardown(t *testing.T) {
	ex := liveExecutor(t)
	before := testutil.CgroupsOf(nil)
	s := newLive(t, ex, executor.SandboxConfig{Policy: livePolicy(ex), IdleTimeout: 100 * time.Millisecond})
	pid := s.HostPID()
	if testutil.ExpectCgroups() && len(testutil.CgroupsOf(nil)) <= len(before) {
		t.Fatal("the sandbox has no cgroup of its own")
	}
	for deadline := time.Now().Add(20 * time.Second); s.Err() == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("never idled out")
		}
	}
	s.Close() // the teardown began as Err changed: this waits for it
	if syscall.Kill(pid, 0) == nil {
		t.Fatal("Close returned with pid 1 alive")
	}
	if left := testutil.CgroupsOf(nil); !slices.Equal(left, before) {
		t.Fatalf("Close returned with the cgroup left: %v (before: %v)", left, before)
	}
}

// Follow delivers both streams whole and returns at the process's end,
// also for a terminal (whose output is all stdout) and when the end
// comes with the last data.
func TestLiveSandboxFollow(t *testing.T) {
	ex := liveExecutor(t)
	s := newLive(t, ex, executor.SandboxConfig{Policy: livePolicy(ex)})
	for _, tty := range []*executor.TTYSize{nil, {Rows: 24, Cols: 80}} {
		p, err := s.Exec(t.Context(), executor.ProcessRequest{Command: "echo out; echo err >&2", TTY: tty})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		err = p.Follow(ctx, 0, 0, func(stream string, data []byte) error { got[stream] += string(data); return nil })
		cancel()
		if err != nil {
			t.Fatalf("tty %v: %v", tty != nil, err)
		}
		if tty == nil && (got["stdout"] != "out\n" || got["stderr"] != "err\n") || tty != nil && got["stdout"] != "out\r\nerr\r\n" {
			t.Fatalf("tty %v: %q", tty != nil, got)
		}
	}
}

// A path that leads out of /workspace is refused, not mapped into it.
func TestLiveSandboxPathOut(t *testing.T) {
	ex := liveExecutor(t)
	s := newLive(t, ex, executor.SandboxConfig{Policy: livePolicy(ex)})
	for _, name := range []string{"../x", "a/../../x", "/etc/x", ".."} {
		if _, err := s.WriteFile(name, strings.NewReader("x"), 0); err == nil || policy.Describe(err).Field != "path" {
			t.Errorf("%q: %v", name, err)
		}
	}
	if _, err := s.WriteFile("/workspace/in.txt", strings.NewReader("x"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat("in.txt"); err != nil {
		t.Fatal(err)
	}
}

// Writing to the stdin of a process that ended is a classified refusal.
func TestLiveSandboxStdinAfterEnd(t *testing.T) {
	ex := liveExecutor(t)
	s := newLive(t, ex, executor.SandboxConfig{Policy: livePolicy(ex)})
	p, err := s.Exec(t.Context(), executor.ProcessRequest{Argv: []string{"true"}, Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	p.Wait(t.Context())
	if _, err := p.Write([]byte("late")); err == nil || policy.Describe(err).Class != policy.ClassInvalid || policy.Describe(err).Field != "stdin" {
		t.Fatalf("write after the end: %v (%+v)", err, policy.Describe(err))
	}
}
