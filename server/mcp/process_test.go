package mcp_test

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/policy"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// uniqueSleep is a sleep duration no other process on the host has in
// its command line: the host finds the test's own sleep by it.
func uniqueSleep() string {
	n, _ := rand.Int(rand.Reader, big.NewInt(1e9))
	return fmt.Sprintf("1000.%09d", n.Int64())
}

// freePort is a port for a server inside a sandbox: any (the sandbox
// has a loopback of its own), random so that the host's check of its
// command line finds only this test's.
func freePort() int {
	n, _ := rand.Int(rand.Reader, big.NewInt(20000))
	return 20000 + int(n.Int64())
}

// openSession opens a session on cs and returns its id.
func openSession(t *testing.T, cs *sdk.ClientSession) string {
	t.Helper()
	r, out := call(t, cs, "session_open", map[string]any{"timeout": 30})
	id, _ := out["session"].(string)
	if r.IsError || id == "" {
		t.Fatalf("session_open: %s", textOf(r))
	}
	return id
}

// A background http.server started by one call is reached by
// http_request in later calls, and serves a file written meanwhile;
// process_list shows it and its port; session_close kills it (the host
// sees no such process left).
func TestBackgroundServer(t *testing.T) {
	e := start(t, nil)
	cs := e.connect(t, nil)
	id := openSession(t, cs)
	port := freePort()
	ps := strconv.Itoa(port)
	r, out := call(t, cs, "process_start", map[string]any{"session": id, "command": "exec python3 -m http.server " + ps + " --bind 127.0.0.1"})
	pid, _ := out["pid"].(float64)
	if r.IsError || pid <= 0 || out["state"] != "running" {
		t.Fatalf("process_start: %v %s", out, textOf(r))
	}
	// Ready once its port listens (process_list reads the sandbox's own
	// /proc/net/tcp).
	if !testutil.WaitFor(20*time.Second, func() bool {
		_, out := call(t, cs, "process_list", map[string]any{"session": id})
		return strings.Contains(fmt.Sprint(out["listening"]), ps)
	}) {
		_, out := call(t, cs, "process_output", map[string]any{"session": id, "pid": pid})
		t.Fatalf("port %d never listened: %v", port, out)
	}
	r, _ = call(t, cs, "write_file", map[string]any{"session": id, "path": "hello.txt", "content": "served from the sandbox"})
	if r.IsError {
		t.Fatalf("write_file: %s", textOf(r))
	}
	r, out = call(t, cs, "http_request", map[string]any{"session": id, "port": port, "path": "/hello.txt"})
	if r.IsError || out["status"] != 200.0 || out["body"] != "served from the sandbox" {
		t.Fatalf("http_request: %v %s", out, textOf(r))
	}
	r, out = call(t, cs, "http_request", map[string]any{"session": id, "port": port, "path": "/nothing-here"})
	if r.IsError || out["status"] != 404.0 {
		t.Fatalf("http_request of a missing file: %v %s", out, textOf(r))
	}
	_, out = call(t, cs, "process_list", map[string]any{"session": id})
	if !strings.Contains(fmt.Sprint(out["processes"]), "http.server") {
		t.Fatalf("process_list: %v", out)
	}
	// A port nothing listens on: refused, retryable, naming it.
	r, out = call(t, cs, "http_request", map[string]any{"session": id, "port": port + 1})
	if info := errorOf(t, r, out); info.Class != policy.ClassUnavailable || !info.Retryable || !strings.Contains(info.Message, "nothing listens") {
		t.Fatalf("a port nothing listens on: %+v", info)
	}
	// Another connection cannot reach it.
	other := e.connect(t, nil)
	r, out = call(t, other, "http_request", map[string]any{"session": id, "port": port})
	if info := errorOf(t, r, out); info.Class != policy.ClassInvalid || info.Field != "session" {
		t.Fatalf("another connection's http_request: %+v", info)
	}
	// The issue's own form: session_run of "python3 -m http.server &",
	// its output not redirected, returns, and a later http_request
	// reaches the server it left behind.
	port2 := port + 2
	ps2 := strconv.Itoa(port2)
	r, out = call(t, cs, "session_run", map[string]any{"session": id, "command": "python3 -m http.server " + ps2 + " --bind 127.0.0.1 &", "timeout": 20})
	if r.IsError || out["status"] != "ok" {
		t.Fatalf("session_run of a server in the background: %v %s", out, textOf(r))
	}
	if !testutil.WaitFor(20*time.Second, func() bool {
		_, out := call(t, cs, "process_list", map[string]any{"session": id})
		return strings.Contains(fmt.Sprint(out["listening"]), ps2)
	}) {
		t.Fatalf("port %d never listened", port2)
	}
	r, out = call(t, cs, "http_request", map[string]any{"session": id, "port": port2, "path": "/hello.txt"})
	if r.IsError || out["status"] != 200.0 || out["body"] != "served from the sandbox" {
		t.Fatalf("http_request to session_run's server: %v %s", out, textOf(r))
	}
	if n := len(testutil.HostProcsWith("http.server", ps)) + len(testutil.HostProcsWith("http.server", ps2)); n != 2 {
		t.Fatalf("the host sees %d of the two http.servers, want 2", n)
	}
	if r, _ := call(t, cs, "session_close", map[string]any{"session": id}); r.IsError {
		t.Fatalf("session_close: %s", textOf(r))
	}
	if n := len(testutil.HostProcsWith("http.server", ps)) + len(testutil.HostProcsWith("http.server", ps2)); n != 0 {
		t.Fatalf("after session_close the host sees %d of the http.servers", n)
	}
}

// process_output returns only what is new since the last read (or from
// an offset), says whether the process runs, and its exit once it
// ended; process_input writes its stdin.
func TestProcessOutputInput(t *testing.T) {
	e := start(t, nil)
	cs := e.connect(t, nil)
	id := openSession(t, cs)
	r, out := call(t, cs, "process_start", map[string]any{"session": id, "command": "echo one; read x; echo two:$x; echo err >&2; exit 3", "stdin": true})
	pid, _ := out["pid"].(float64)
	if r.IsError || pid <= 0 {
		t.Fatalf("process_start: %v %s", out, textOf(r))
	}
	read := func(args map[string]any) map[string]any {
		t.Helper()
		args["session"], args["pid"] = id, pid
		r, out := call(t, cs, "process_output", args)
		if r.IsError {
			t.Fatalf("process_output %v: %s", args, textOf(r))
		}
		return out
	}
	if out := read(map[string]any{"wait": 20}); out["stdout"] != "one\n" || out["running"] != true || out["ended"] != false {
		t.Fatalf("first read: %v", out)
	}
	// Nothing new: the process waits for its input.
	if out := read(map[string]any{}); out["stdout"] != "" || out["stderr"] != "" || out["stdout_offset"] != 4.0 || out["running"] != true {
		t.Fatalf("second read: %v", out)
	}
	r, out = call(t, cs, "process_input", map[string]any{"session": id, "pid": pid, "data": "hi\n"})
	if r.IsError {
		t.Fatalf("process_input: %v %s", out, textOf(r))
	}
	var got map[string]any
	stdout, stderr := "", ""
	if !testutil.WaitFor(20*time.Second, func() bool {
		got = read(map[string]any{"wait": 1})
		stdout, stderr = stdout+got["stdout"].(string), stderr+got["stderr"].(string)
		return got["ended"] == true
	}) {
		t.Fatalf("never ended: %v", got)
	}
	if stdout != "two:hi\n" || stderr != "err\n" || got["exit_code"] != 3.0 || got["status"] != "exited" || got["running"] != false {
		t.Fatalf("after the input: stdout %q stderr %q, last %v", stdout, stderr, got)
	}
	// From an offset: the whole of it again.
	if out := read(map[string]any{"stdout_offset": 0, "stderr_offset": 0}); out["stdout"] != "one\ntwo:hi\n" || out["stderr"] != "err\n" {
		t.Fatalf("from offset 0: %v", out)
	}
	// A process without stdin: true takes no input.
	_, out = call(t, cs, "process_start", map[string]any{"session": id, "argv": []string{"sleep", "100"}})
	r, out = call(t, cs, "process_input", map[string]any{"session": id, "pid": out["pid"], "data": "x"})
	if info := errorOf(t, r, out); info.Class != policy.ClassInvalid {
		t.Fatalf("input to a process without stdin: %+v", info)
	}
	// An unknown pid.
	r, out = call(t, cs, "process_output", map[string]any{"session": id, "pid": 99999})
	if info := errorOf(t, r, out); info.Class != policy.ClassInvalid || info.Field != "pid" {
		t.Fatalf("unknown pid: %+v", info)
	}
}

// process_signal stops a process (TERM by default): it is reported
// exited by the signal; a bad signal name is refused.
func TestProcessSignal(t *testing.T) {
	e := start(t, nil)
	cs := e.connect(t, nil)
	id := openSession(t, cs)
	marker := uniqueSleep()
	_, out := call(t, cs, "process_start", map[string]any{"session": id, "argv": []string{"sleep", marker}})
	pid := out["pid"]
	if n := len(testutil.HostProcsWith("sleep", marker)); n != 1 {
		t.Fatalf("the host sees %d of the sleep", n)
	}
	r, out := call(t, cs, "process_signal", map[string]any{"session": id, "pid": pid, "signal": "NOPE"})
	if info := errorOf(t, r, out); info.Field != "signal" {
		t.Fatalf("a bad signal: %+v", info)
	}
	if r, out := call(t, cs, "process_signal", map[string]any{"session": id, "pid": pid}); r.IsError {
		t.Fatalf("process_signal: %v %s", out, textOf(r))
	}
	var got map[string]any
	if !testutil.WaitFor(20*time.Second, func() bool {
		_, got = call(t, cs, "process_output", map[string]any{"session": id, "pid": pid, "wait": 1})
		return got["ended"] == true
	}) {
		t.Fatalf("never ended: %v", got)
	}
	if got["status"] != "signaled" || got["exit_code"] != 143.0 {
		t.Fatalf("after SIGTERM: %v", got)
	}
	if n := len(testutil.HostProcsWith("sleep", marker)); n != 0 {
		t.Fatalf("the host still sees %d of the sleep", n)
	}
}

// Code of session_run and process_start goes where no user file is: a
// user's main.py is never overwritten, and is not reported as the run's.
func TestCodeBesideUserFiles(t *testing.T) {
	e := start(t, nil)
	cs := e.connect(t, nil)
	id := openSession(t, cs)
	if r, _ := call(t, cs, "write_file", map[string]any{"session": id, "path": "main.py", "content": "print('mine')\n"}); r.IsError {
		t.Fatal(textOf(r))
	}
	r, out := call(t, cs, "session_run", map[string]any{"session": id, "language": "python", "code": "print(open('main.py').read().strip())"})
	if r.IsError || out["stdout"] != "print('mine')\n" {
		t.Fatalf("session_run python: %v %s", out, textOf(r))
	}
	_, out = call(t, cs, "process_start", map[string]any{"session": id, "language": "javascript", "code": "console.log(require('fs').readFileSync('main.py', 'utf8').trim())"})
	_, out = call(t, cs, "process_output", map[string]any{"session": id, "pid": out["pid"], "wait": 20})
	if out["stdout"] != "print('mine')\n" {
		t.Fatalf("process_start javascript: %v", out)
	}
	r, out = call(t, cs, "read_file", map[string]any{"session": id, "path": "main.py"})
	if r.IsError || out["content"] != "print('mine')\n" {
		t.Fatalf("main.py after: %v %s", out, textOf(r))
	}
}

// The end of the client's connection closes its sessions and kills what
// runs in them: a background sleep is gone from the host.
func TestConnectionEndKills(t *testing.T) {
	e := start(t, nil)
	ct, st := sdk.NewInMemoryTransports()
	ss, err := e.m.Server().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := openSession(t, cs)
	marker := uniqueSleep()
	if r, out := call(t, cs, "process_start", map[string]any{"session": id, "argv": []string{"sleep", marker}}); r.IsError {
		t.Fatalf("process_start: %v %s", out, textOf(r))
	}
	if n := len(testutil.HostProcsWith("sleep", marker)); n != 1 {
		t.Fatalf("the host sees %d of the sleep, want 1", n)
	}
	cs.Close()
	ss.Wait()
	// The connection's end is handled by a goroutine of its own: wait
	// for it to have closed the session (its Close returns once every
	// process is dead).
	if !testutil.WaitFor(20*time.Second, func() bool { return len(testutil.HostProcsWith("sleep", marker)) == 0 }) {
		t.Fatalf("the host still sees the sleep after the connection ended (session open: %v)", e.srv.SessionOpen(id))
	}
	if e.srv.SessionOpen(id) {
		t.Fatal("the session outlived its connection")
	}
}
