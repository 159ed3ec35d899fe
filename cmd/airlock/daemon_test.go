package main

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// The CLI scripts/build makes leaves the daemons out (tag airlock_slim):
// none of their heavy modules is linked into it, all of them into the
// airlock-daemon beside it; airlock serve and airlock mcp run that binary
// (their --help answers through it), and without it they are refused,
// naming it and the fix.
func TestSlimCLIExecsDaemon(t *testing.T) {
	bin := testutil.BinDir(t)
	heavy := []string{"github.com/prometheus/client_golang", "github.com/modelcontextprotocol/go-sdk"}
	for name, want := range map[string]bool{"airlock": false, "airlock-daemon": true} {
		info, err := buildinfo.ReadFile(filepath.Join(bin, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, mod := range heavy {
			linked := false
			for _, d := range info.Deps {
				linked = linked || d.Path == mod
			}
			if linked != want {
				t.Errorf("%s: %s linked %v, want %v", name, mod, linked, want)
			}
		}
	}
	run := func(airlock string, args ...string) (int, string, string) {
		return runCLI(t, exec.Command(airlock, args...))
	}
	for _, c := range []string{"serve", "mcp"} {
		if code, out, errOut := run(filepath.Join(bin, "airlock"), c, "--help"); code != 0 || !strings.Contains(out, "usage: airlock "+c) {
			t.Errorf("airlock %s --help: exit %d, stdout %q, stderr %q", c, code, out, errOut)
		}
	}
	alone := filepath.Join(t.TempDir(), "airlock")
	data, err := os.ReadFile(filepath.Join(bin, "airlock"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"serve", "mcp"} {
		code, out, errOut := run(alone, c, "--help")
		if code != exitSetup || out != "" || !strings.Contains(errOut, "no airlock-daemon beside") || !strings.Contains(errOut, "scripts/build makes it") {
			t.Errorf("airlock %s alone: exit %d, stdout %q, stderr %q; want 125 naming airlock-daemon", c, code, out, errOut)
		}
	}
}

// Beside a static airlock-daemon, the CLI scripts/build makes has no cgo
// (no libseccomp) and no egress proxy (no net/http, no crypto/tls). It
// runs a request itself when its filter is in the cache that
// airlock-daemon fills (one key for both: the build token), and runs
// airlock-daemon in its place for a filter it lacks, for --net allow,
// for code on stdin and for the commands that compile (doctor, policy,
// posture). Without the daemon beside it, a cached filter still runs and
// each of the others is refused, naming the daemon and the fix.
func TestSlimCLIFiltersFromDaemon(t *testing.T) {
	bin := testutil.BinDir(t)
	cli, err := buildinfo.ReadFile(filepath.Join(bin, "airlock"))
	if err != nil {
		t.Fatal(err)
	}
	daemon, err := buildinfo.ReadFile(filepath.Join(bin, "airlock-daemon"))
	if err != nil {
		t.Fatal(err)
	}
	setting := func(bi *buildinfo.BuildInfo, key string) string {
		for _, s := range bi.Settings {
			if s.Key == key {
				return s.Value
			}
		}
		return ""
	}
	// Elsewhere scripts/build gives the CLI cgo, and these tests do not
	// apply.
	testutil.RequireFeature(t, "a static airlock-daemon on amd64 or arm64 (scripts/build gives the CLI no cgo)",
		strings.Contains(setting(daemon, "-ldflags"), "-static") && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64"))
	if got := setting(cli, "CGO_ENABLED"); got != "0" {
		t.Errorf("the CLI was built with CGO_ENABLED=%q, want 0", got)
	}
	f, err := elf.Open(filepath.Join(bin, "airlock"))
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if strings.HasPrefix(s.Name, "net/http.") || strings.HasPrefix(s.Name, "crypto/tls.") || strings.Contains(s.Name, "libseccomp") {
			t.Fatalf("the CLI links %s", s.Name)
		}
	}

	dir := testutil.WorldReadableDir(t)
	for _, name := range []string{"airlock", "airlock-daemon", "airlock-init", "airlock-spawn"} {
		data, err := os.ReadFile(filepath.Join(bin, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cache := t.TempDir()
	run := func(stdin string, args ...string) (int, string, string) {
		cmd := exec.Command(filepath.Join(dir, "airlock"), args...)
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
		cmd.Stdin = strings.NewReader(stdin)
		return runCLI(t, cmd)
	}
	cached := func() []string {
		m, _ := filepath.Glob(filepath.Join(cache, "airlock", "seccomp-*"))
		return m
	}
	rule := filepath.Join(t.TempDir(), "rule.json")
	if err := os.WriteFile(rule, []byte(`{"seccomp":{"rules":[{"names":["getpid"],"action":"kill"}]}}`), 0o644); err != nil {
		t.Fatal(err)
	}

	rule2 := filepath.Join(t.TempDir(), "rule2.json")
	if err := os.WriteFile(rule2, []byte(`{"seccomp":{"rules":[{"names":["getppid"],"action":"kill"}]}}`), 0o644); err != nil {
		t.Fatal(err)
	}

	// With the daemon: the first run of a policy with a rule compiles
	// through it, into the cache; the default policy's program is
	// compiled ahead (seccomp.Precompiled), never cached.
	if code, out, errOut := run("", "run", "--policy", rule, "--", "/bin/echo", "hi"); code != 0 || out != "hi\n" {
		t.Fatalf("first run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := run("", "run", "--", "/bin/echo", "hi"); code != 0 || out != "hi\n" {
		t.Fatalf("the default policy: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if n := len(cached()); n != 1 {
		t.Fatalf("%d filters cached after the first runs, want 1", n)
	}
	// A closed stdout reaches the daemon closed: the result it cannot
	// write is not lost without a word.
	var errb bytes.Buffer
	closed := exec.Command("/bin/sh", "-c", `exec "$@" >&-`, "sh", filepath.Join(dir, "airlock"), "run", "--json", "--policy", rule, "--", "/bin/true")
	closed.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	closed.Stderr = &errb
	if err := closed.Run(); err != nil || !strings.Contains(errb.String(), "it was closed when airlock started") {
		t.Errorf("a closed stdout, through the daemon: %v, stderr %q", err, errb.String())
	}
	// What the CLI could read only once goes to the daemon unread: code
	// and a policy on stdin (-, /dev/stdin: a pipe here).
	if code, out, errOut := run("echo from stdin", "exec", "--lang", "sh", "-"); code != 0 || out != "from stdin\n" {
		t.Fatalf("exec -: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := run("echo from a pipe", "exec", "--lang", "sh", "/dev/stdin"); code != 0 || out != "from a pipe\n" {
		t.Fatalf("exec /dev/stdin: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := run(`{"timeout": "7s"}`, "run", "--json", "--policy", "/dev/stdin", "--", "/bin/true"); code != 0 || !strings.Contains(out, `"timeout": "7s"`) {
		t.Fatalf("run --policy /dev/stdin: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// And --net allow (the proxy) and the commands that compile.
	if code, out, errOut := run("", "run", "--net", "allow:127.0.0.1:1", "--", "/bin/true"); code != 0 {
		t.Fatalf("--net allow: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := run("", "policy", "validate"); code != 0 {
		t.Fatalf("policy validate: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// A daemon of another build refuses the CLI's request.
	stale := exec.Command(filepath.Join(dir, "airlock-daemon"), "run", "--json", "--", "/bin/echo", "RAN")
	stale.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache, callerEnv+"=another-build")
	if code, out, errOut := runCLI(t, stale); code != exitSetup || strings.Contains(out, "RAN\n") || !strings.Contains(errOut, "was not built with the airlock that ran it") {
		t.Errorf("a daemon of another build: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	if err := os.Remove(filepath.Join(dir, "airlock-daemon")); err != nil {
		t.Fatal(err)
	}
	// Without it: the cached filter runs, in the CLI alone, and its
	// stdin reaches the program.
	if code, out, errOut := run("piped\n", "run", "--policy", rule, "--", "/bin/cat"); code != 0 || out != "piped\n" {
		t.Fatalf("cached filter without airlock-daemon: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// So does the default policy's for a user without a home and no
	// cache anywhere (HOME=/nonexistent, no XDG_*, an airlock-UID in
	// TMPDIR that others can write, refused): what no daemon compiled
	// and no cache holds, the CLI has built in.
	tmp := t.TempDir()
	open := filepath.Join(tmp, "airlock-"+strconv.Itoa(os.Geteuid()))
	if err := os.Mkdir(open, 0o700); err != nil || os.Chmod(open, 0o777) != nil {
		t.Fatal(err)
	}
	homeless := exec.Command(filepath.Join(dir, "airlock"), "run", "--", "/bin/echo", "no home")
	homeless.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "TMPDIR=" + tmp}
	if code, out, errOut := runCLI(t, homeless); code != 0 || out != "no home\n" {
		t.Fatalf("the default policy without a home, a cache or airlock-daemon: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// A closed stdout is told apart in the CLI alone too (its ELF entry).
	var errAlone bytes.Buffer
	alone := exec.Command("/bin/sh", "-c", `exec "$@" >&-`, "sh", filepath.Join(dir, "airlock"), "run", "--json", "--", "/bin/true")
	alone.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
	alone.Stderr = &errAlone
	if err := alone.Run(); err != nil || !strings.Contains(errAlone.String(), "it was closed when airlock started") {
		t.Errorf("a closed stdout, the CLI alone: %v, stderr %q", err, errAlone.String())
	}
	refused := func(what string, code int, out, errOut string) {
		t.Helper()
		if code != exitSetup || !strings.Contains(errOut, "no airlock-daemon beside") || !strings.Contains(errOut, "scripts/build makes it") {
			t.Errorf("%s without airlock-daemon: exit %d, stdout %q, stderr %q; want 125 naming airlock-daemon", what, code, out, errOut)
		}
	}
	code, out, errOut := run("", "run", "--json", "--policy", rule2, "--", "/bin/true")
	refused("a filter not cached", code, out, errOut)
	var res struct {
		Status string `json:"status"`
		Error  struct {
			Class string `json:"class"`
			Field string `json:"field"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Status != "error" || res.Error.Class != "unsupported" || res.Error.Field != "seccomp" {
		t.Errorf("a filter not cached, --json: %+v (%v), want an unsupported error naming seccomp", res, err)
	}
	code, out, errOut = run("", "run", "--net", "allow:127.0.0.1:1", "--", "/bin/true")
	refused("--net allow", code, out, errOut)
	code, out, errOut = run("echo hi", "exec", "--lang", "sh", "-")
	refused("exec -", code, out, errOut)
	code, out, errOut = run("echo hi", "exec", "--lang", "sh", "/dev/stdin")
	refused("exec /dev/stdin", code, out, errOut)
	code, out, errOut = run("{}", "run", "--policy", "/dev/stdin", "--", "/bin/true")
	refused("run --policy /dev/stdin", code, out, errOut)
	for _, c := range []string{"doctor", "policy", "posture"} {
		code, out, errOut = run("", c, "--help")
		refused(c, code, out, errOut)
	}
	if n := len(cached()); n != 1 {
		t.Errorf("%d filters cached, want the first run's only", n)
	}
}

// runCLI runs cmd and returns its exit status, stdout and stderr (a start
// that fails fails t).
func runCLI(t *testing.T, cmd *exec.Cmd) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}
