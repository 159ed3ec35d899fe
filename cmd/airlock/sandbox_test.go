package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// runSandboxCLI runs `airlock sandbox ARGS` (this test binary as the CLI)
// against s, with stdin; it returns the exit status, stdout and stderr.
func runSandboxCLI(t *testing.T, s *served, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"sandbox"}, args...)...)
	cmd.Env = []string{"AIRLOCK_TEST_AS_CLI=1", "PATH=/usr/bin:/bin", "AIRLOCK_SERVER=unix:" + s.sock}
	cmd.Stdin = strings.NewReader(stdin)
	return runCLI(t, cmd)
}

// The docker-like CLI against a running serve: create prints an id; exec
// -d leaves a dev server running that a later exec and the host (curl
// through the port proxy) reach; exec's exit status is the program's;
// -i passes stdin; -ti (docker's -t -i) gives bash a pty that answers 42; ps, ls, logs,
// kill, rm; a refusal is one line and 125, an unreachable server 75.
// Then SIGTERM to serve ends every sandbox: nothing of them is left.
func TestSandboxCLI(t *testing.T) {
	testutil.RequireBinary(t, "python3")
	testutil.RequireBinary(t, "curl")
	dir := serveDir(t)
	s := serve(t, dir)
	create := []string{"create", "--name", "web", "--idle-timeout", "2m"}
	if os.Getuid() == 0 {
		// An explicit limit needs a cgroup: rootless on this cgroup v1
		// host it is refused (125), as it should be.
		create = append(create, "--memory", "256MiB")
	}
	code, out, errs := runSandboxCLI(t, s, "", create...)
	id := strings.TrimSpace(out)
	if code != 0 || len(id) < 16 {
		t.Fatalf("create: %d %q %q", code, out, errs)
	}
	code, out, errs = runSandboxCLI(t, s, "", "exec", "-d", id, "--", "python3", "-m", "http.server", "8000", "--bind", "127.0.0.1")
	pid, _ := strconv.Atoi(strings.TrimSpace(out))
	if code != 0 || pid <= 0 {
		t.Fatalf("exec -d: %d %q %q", code, out, errs)
	}
	const marker = "1000.0625"
	if code, out, errs = runSandboxCLI(t, s, "", "exec", id, "--", "sh", "-c", "sleep "+marker+" & echo bg; exit 3"); code != 3 || out != "bg\n" {
		t.Fatalf("exec's status: %d %q %q", code, out, errs)
	}
	var page []byte
	if !testutil.WaitFor(20*time.Second, func() bool {
		var err error
		page, err = exec.Command("curl", "-sS", "--fail", "--unix-socket", s.sock, "http://localhost/v1/sandboxes/"+id+"/ports/8000/").Output()
		return err == nil
	}) {
		t.Fatalf("curl never reached the dev server: %s", s.stderr)
	}
	if !strings.Contains(string(page), "Directory listing") {
		t.Fatalf("through the proxy: %q", page)
	}
	if code, out, _ = runSandboxCLI(t, s, "", "exec", id, "--", "curl", "-sS", "http://127.0.0.1:8000/"); code != 0 || !strings.Contains(out, "Directory listing") {
		t.Fatalf("a later exec to the server: %d %q", code, out)
	}
	if code, out, _ = runSandboxCLI(t, s, "ping\n", "exec", "-i", id, "--", "cat"); code != 0 || out != "ping\n" {
		t.Fatalf("exec -i: %d %q", code, out)
	}
	if code, out, errs = runSandboxCLI(t, s, "echo $((6*7))\nexit 5\n", "exec", "-ti", id, "--", "bash", "--norc", "-i"); code != 5 || !strings.Contains(out, "\r\n42\r\n") {
		t.Fatalf("exec -t -i: %d %q %q", code, out, errs)
	}
	if code, out, _ = runSandboxCLI(t, s, "", "ps", id); code != 0 || !strings.Contains(out, strconv.Itoa(pid)+" ") || !strings.Contains(out, "http.server") {
		t.Fatalf("ps: %d %q", code, out)
	}
	if code, out, _ = runSandboxCLI(t, s, "", "ls"); code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "web") {
		t.Fatalf("ls: %d %q", code, out)
	}
	if code, _, errs = runSandboxCLI(t, s, "", "logs", id, strconv.Itoa(pid)); code != 0 || !strings.Contains(errs, "GET / ") {
		t.Fatalf("logs: %d %q", code, errs)
	}
	if code, _, errs = runSandboxCLI(t, s, "", "kill", id, strconv.Itoa(pid)); code != 0 {
		t.Fatalf("kill: %d %q", code, errs)
	}
	// logs -f returns once the killed server's output ended.
	if code, _, errs = runSandboxCLI(t, s, "", "logs", "-f", id, strconv.Itoa(pid)); code != 0 || !strings.Contains(errs, "GET / ") {
		t.Fatalf("logs -f of the killed server: %d %q", code, errs)
	}
	// Refusals: one line naming the cause; 125, or 75 when a retry can
	// help (no server).
	code, out, errs = runSandboxCLI(t, s, "", "exec", "0123456789abcdef0123", "--", "true")
	if code != 125 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "no open sandbox") {
		t.Fatalf("an unknown id: %d %q %q", code, out, errs)
	}
	code, _, errs = runSandboxCLI(t, s, "", "ls", "--server", "unix:"+dir+"/nothing.sock")
	if code != 75 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "cannot reach airlock serve") {
		t.Fatalf("no server: %d %q", code, errs)
	}
	if n := len(testutil.HostProcsWith("sleep", marker)); n != 1 {
		t.Fatalf("the background sleep: %d", n)
	}
	// SIGTERM: serve drains and closes every sandbox.
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, s.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit after SIGTERM\n%s", s.stderr)
	}
	s.done <- nil
	if !testutil.WaitFor(10*time.Second, func() bool { return len(testutil.HostProcsWith("sleep", marker)) == 0 }) {
		t.Fatal("a sandbox's process outlived serve's SIGTERM")
	}
	if left := testutil.CgroupsOf([]int{s.cmd.Process.Pid}); len(left) > 0 {
		t.Errorf("cgroups left: %v", left)
	}
}

// kill -9 of serve: its sandboxes' processes die with it, and the next
// start on the same work dir removes the cgroups they left.
func TestSandboxServeSIGKILL(t *testing.T) {
	dir := serveDir(t)
	s := serve(t, dir)
	code, out, errs := runSandboxCLI(t, s, "", "create")
	id := strings.TrimSpace(out)
	if code != 0 {
		t.Fatalf("create: %d %q", code, errs)
	}
	const marker = "2000.0625"
	if code, _, errs = runSandboxCLI(t, s, "", "exec", "-d", id, "--", "sleep", marker); code != 0 {
		t.Fatalf("exec -d: %d %q", code, errs)
	}
	if code, _, errs = runSandboxCLI(t, s, "", "exec", id, "--", "sh", "-c", "sleep "+marker+" &"); code != 0 {
		t.Fatalf("exec: %d %q", code, errs)
	}
	if !testutil.WaitFor(10*time.Second, func() bool { return len(testutil.HostProcsWith("sleep", marker)) == 2 }) {
		t.Fatalf("the sleeps: %v", testutil.HostProcsWith("sleep", marker))
	}
	pid := s.cmd.Process.Pid
	s.cmd.Process.Kill()
	<-s.done
	s.done <- nil
	if !testutil.WaitFor(10*time.Second, func() bool { return len(testutil.HostProcsWith("sleep", marker)) == 0 }) {
		t.Fatalf("a sandbox's process outlived the killed server: %v", testutil.HostProcsWith("sleep", marker))
	}
	if os.Getuid() == 0 && len(testutil.CgroupsOf([]int{pid})) == 0 {
		t.Fatal("the killed server left no cgroup: nothing to prove")
	}
	s2 := serve(t, dir)
	if left := testutil.CgroupsOf([]int{pid}); len(left) > 0 {
		t.Errorf("stale cgroups of the killed server: %v", left)
	}
	// The new server knows no sandbox of the old one.
	hc := s2.unixClient()
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://airlock/v1/sandboxes/" + id)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the old sandbox on the new server: %d", resp.StatusCode)
	}
}
