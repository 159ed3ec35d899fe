package executor_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// requireLandlock requires a kernel with Landlock ABI min, and returns
// the ABI an Executor writes rulesets for.
func requireLandlock(t *testing.T, ex *executor.Executor, min int) int {
	t.Helper()
	abi := ex.Host().LandlockABI()
	testutil.RequireLandlock(t, abi, min)
	return abi
}

// queued reports whether a connection waits in ln's accept queue: a
// connect that returned has put it there, so this is no race.
func queued(t *testing.T, ln net.Listener) bool {
	t.Helper()
	type deadliner interface{ SetDeadline(time.Time) error }
	ln.(deadliner).SetDeadline(time.Now().Add(200 * time.Millisecond))
	c, err := ln.Accept()
	if err == nil {
		c.Close()
		return true
	}
	return false
}

// landlockProbe tries, from inside, what the process backend under
// Landlock must deny; it prints what happened, for the log only: the
// verdicts are the host's.
const landlockProbe = `import os, socket, sys, signal
canaries, tcp, abstract, victim, outside = sys.argv[1].split(","), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5].split(",")
def attempt(name, f):
    try:
        print(name, "OK", f())
    except OSError as e:
        print(name, "denied", e.errno)
for c in canaries:
    attempt("read " + c, lambda: open(c).read())
for o in outside:
    attempt("write " + o, lambda: open(o, "w").write("escaped"))
attempt("tcp connect", lambda: socket.create_connection(("127.0.0.1", tcp), timeout=5).close())
attempt("abstract connect", lambda: socket.socket(socket.AF_UNIX).connect("\0" + abstract))
attempt("signal", lambda: os.kill(victim, signal.SIGTERM))
attempt("write workspace", lambda: open("inside", "w").write("ok"))
`

// canary is a host file with a secret of its own.
type canary struct {
	path, secret string
	// bare: the sandbox's uid reads it without Landlock (the positive
	// control shows it), so only Landlock can keep it out.
	bare bool
}

// openDir makes a directory under parent that the sandbox's uid can
// read, list and write (0777: only Landlock stands in its way), removed
// after t.
func openDir(t *testing.T, parent string) string {
	t.Helper()
	dir, err := os.MkdirTemp(parent, "airlock-landlock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The process backend under Landlock, root and rootless, judged from the
// host: it cannot read a canary outside its binds, write outside its
// workspace, connect to a host loopback listener (but with net host),
// signal a host process of its own uid, nor reach a host abstract unix
// socket. The canaries and the write targets are in world-writable
// directories under /tmp, under /var/tmp, and beside the workspace in the
// executor's work dir (plus one under /root as root, which plain
// permissions deny too); the same probe without Landlock, the positive
// control, reads every other canary, writes every target, connects,
// signals and reaches the abstract socket, so each denial is Landlock's.
func TestProcessLandlock(t *testing.T) {
	py := testutil.RequireBinary(t, "python3")
	work := testutil.WorldReadableDir(t)
	ex, err := executor.New(executor.Config{WorkDir: work})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	abi := requireLandlock(t, ex, policy.LandlockScope)
	var canaries []canary
	var outside []string
	for i, parent := range []string{"/tmp", "/var/tmp", work} {
		dir := openDir(t, parent)
		canaries = append(canaries, canary{path: filepath.Join(dir, "canary"), secret: fmt.Sprintf("canary-%d-%d", i, time.Now().UnixNano()), bare: true})
		outside = append(outside, filepath.Join(dir, "escaped"))
	}
	if !testutil.Rootless() {
		// The canary under /root (0700): no uid but root's reads
		// it, with or without Landlock.
		rdir, err := os.MkdirTemp("/root", "airlock-landlock-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(rdir) })
		canaries = append(canaries, canary{path: filepath.Join(rdir, "canary"), secret: fmt.Sprintf("canary-root-%d", time.Now().UnixNano())})
	}
	var paths []string
	for _, c := range canaries {
		if err := os.WriteFile(c.path, []byte(c.secret), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, c.path)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	abstract := fmt.Sprintf("airlock-landlock-%d", time.Now().UnixNano())
	unixLn, err := net.Listen("unix", "@"+abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer unixLn.Close()
	// run runs the probe on ex, and returns what it printed and the
	// signal that ended a host process of the sandbox's uid (SIGKILL,
	// ours after the run, unless the program's SIGTERM came first).
	run := func(t *testing.T, ex *executor.Executor, p policy.Policy) (*executor.Result, syscall.Signal) {
		t.Helper()
		victim := sameUIDProcess(t)
		args := []string{py, "-c", landlockProbe, strings.Join(paths, ","), fmt.Sprint(tcp.Addr().(*netTCPAddr).Port),
			abstract, fmt.Sprint(victim.Process.Pid), strings.Join(outside, ",")}
		res, err := ex.Execute(t.Context(), executor.Request{Args: args, Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("inside:\n%s%s", res.Stdout, res.Stderr)
		victim.Process.Kill()
		victim.Wait()
		if res.Status != nsjail.StatusOK || res.Enforced.Backend != "process" {
			t.Fatalf("status %s, enforced %+v", res.Status, res.Enforced)
		}
		if !strings.Contains(res.Stdout, "write workspace OK") {
			t.Errorf("the workspace was not writable: %s", res.Stdout)
		}
		return res, victim.ProcessState.Sys().(syscall.WaitStatus).Signal()
	}

	for _, net := range []policy.Net{"", policy.NetNone, policy.NetHost} {
		t.Run("net "+string(net), func(t *testing.T) {
			res, sig := run(t, ex, policy.Policy{Backend: "process", Net: net})
			if res.Enforced.Landlock != abi {
				t.Fatalf("enforced %+v, want landlock ABI %d", res.Enforced, abi)
			}
			for _, c := range canaries {
				if strings.Contains(res.Stdout, c.secret) {
					t.Errorf("the canary %s outside the binds was read", c.path)
				}
			}
			for _, o := range outside {
				if testutil.Exists(o) {
					t.Errorf("%s was written, outside the workspace", o)
				}
			}
			if got := queued(t, tcp); got != (net == policy.NetHost) {
				t.Errorf("the host's loopback listener was reached: %v (net %q)", got, net)
			}
			if queued(t, unixLn) {
				t.Error("the host's abstract unix socket was reached")
			}
			if sig != syscall.SIGKILL {
				t.Errorf("a host process of the sandbox's uid was signalled: %v", sig)
			}
		})
	}

	// The positive control: the same uid, the same probe, no Landlock.
	t.Run("without landlock", func(t *testing.T) {
		bare, err := executor.New(executor.Config{WorkDir: work})
		if err != nil {
			t.Fatal(err)
		}
		defer bare.Close()
		executor.SimulateLandlock(bare, 0)
		// Without the seccomp filter too, whose socket gate refuses unix
		// sockets (TestSocketTable): the abstract socket is then only
		// Landlock's to deny, as on net host above.
		res, sig := run(t, bare, policy.Policy{Backend: "process", BestEffort: policy.DegradeLandlock | policy.DegradeNetwork, Seccomp: policy.Seccomp{Profile: "none"}})
		if res.Enforced.Landlock != 0 {
			t.Fatalf("enforced %+v, want no landlock", res.Enforced)
		}
		for _, c := range canaries {
			if got := strings.Contains(res.Stdout, c.secret); got != c.bare {
				t.Errorf("without Landlock the canary %s was read: %v, want %v", c.path, got, c.bare)
			}
		}
		for _, o := range outside {
			if !testutil.Exists(o) {
				t.Errorf("without Landlock %s was not written: the check above proves nothing", o)
			}
			os.Remove(o)
		}
		if !queued(t, tcp) {
			t.Error("without Landlock the host's loopback listener was not reached")
		}
		if !queued(t, unixLn) {
			t.Error("without Landlock the host's abstract unix socket was not reached")
		}
		if sig != syscall.SIGTERM {
			t.Errorf("without Landlock the host process of the sandbox's uid ended by %v, want the program's SIGTERM", sig)
		}
	})
}

// Under Landlock a read-only bind of a host path at its own path is a
// rule: the canary there is readable (the positive control of the
// denials above), and still not writable.
func TestProcessLandlockBind(t *testing.T) {
	ex, err := executor.New(executor.Config{WorkDir: testutil.WorldReadableDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	requireLandlock(t, ex, policy.LandlockFS)
	dir, err := os.MkdirTemp("/tmp", "airlock-landlock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	secret := fmt.Sprintf("canary-%d", time.Now().UnixNano())
	if err := os.WriteFile(filepath.Join(dir, "canary"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	p := policy.Policy{Backend: "process", Net: processNet(ex), BestEffort: processDegrade(ex), Mounts: []policy.Mount{{Type: policy.MountROBind, Source: dir, Target: dir}}}
	res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"sh", "-c", `cat "$0"/canary; echo x > "$0"/escaped`, dir}, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != secret || testutil.Exists(filepath.Join(dir, "escaped")) {
		t.Errorf("ro-bind in place: stdout %q, stderr %q, written %v", res.Stdout, res.Stderr, testutil.Exists(filepath.Join(dir, "escaped")))
	}
	p.Mounts[0].Target = "/data"
	if _, err := ex.Execute(t.Context(), executor.Request{Args: []string{"true"}, Policy: p}); !errors.Is(err, executor.ErrUnsupported) {
		t.Errorf("a bind elsewhere on the process backend: %v", err)
	}
}

type netTCPAddr = net.TCPAddr

// sameUIDProcess starts a process on the host with the uid the process
// backend's program runs as (the caller's; 65534 as root).
func sameUIDProcess(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "1000")
	if !testutil.Rootless() {
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.ProcessState == nil {
			c.Process.Kill()
			c.Wait()
		}
	})
	return c
}

// A simulated host without user namespaces runs the language table on
// the process backend under Landlock: each interpreter starts, reads its
// code, input and stdin, and exits as asked, with only its system
// directories and its workspace reachable. The process backend is
// reached both ways such a host reaches it: chosen (backend process),
// and as the fallback of a best_effort policy that asked for nothing
// else (as in TestProcessBackendOnlyByChoice), where Landlock must be on
// too: the enforcement says so, and a canary the sandbox's uid could
// read bare (TestProcessLandlock's positive control) stays unread.
func TestLanguagesProcessLandlock(t *testing.T) {
	ex, err := executor.New(executor.Config{WorkDir: testutil.WorldReadableDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	abi := requireLandlock(t, ex, policy.LandlockNet)
	executor.SimulateNoNamespaces(ex, &policy.UnsupportedError{Control: "user namespaces", Reason: "simulated", Fix: "enable them"})
	check := func(fallback bool) func(*testing.T, *executor.Result) {
		return func(t *testing.T, res *executor.Result) {
			if res.Enforced.Backend != "process" || res.Enforced.Landlock != abi || res.Enforced.Network != "landlock" ||
				res.Enforced.Rootfs != "none (host filesystem, landlock rules)" || slices.Contains(res.Enforced.NotEnforced, "filesystem isolation") ||
				slices.Contains(res.Enforced.NotEnforced, "namespaces") != fallback {
				t.Errorf("enforced %+v", res.Enforced)
			}
		}
	}
	t.Run("backend process", func(t *testing.T) {
		runLanguages(t, ex, policy.Policy{Backend: "process", Net: policy.NetNone}, check(false))
	})
	t.Run("fallback", func(t *testing.T) {
		p := policy.Policy{BestEffort: policy.DegradeNamespaces}
		runLanguages(t, ex, p, check(true))
		dir := openDir(t, "/var/tmp")
		secret := fmt.Sprintf("canary-%d", time.Now().UnixNano())
		if err := os.WriteFile(filepath.Join(dir, "canary"), []byte(secret), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := ex.Execute(t.Context(), executor.Request{Language: "sh", Code: `cat "$1"/canary; echo x > "$1"/escaped`, Argv: []string{dir}, Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		check(true)(t, res)
		if strings.Contains(res.Stdout, secret) || testutil.Exists(filepath.Join(dir, "escaped")) || !strings.Contains(res.Stderr, "Permission denied") {
			t.Errorf("the fallback reached %s: stdout %q, stderr %q, written %v", dir, res.Stdout, res.Stderr, testutil.Exists(filepath.Join(dir, "escaped")))
		}
	})
}

// Where the kernel lacks what a policy needs of Landlock, the process
// backend refuses it, naming the control and the ABI (net none, the
// default too, needs network rules, ABI 4), unless best_effort; without
// Landlock at all it runs on the host's filesystem and says so.
func TestProcessLandlockMissing(t *testing.T) {
	ex, err := executor.New(executor.Config{WorkDir: testutil.WorldReadableDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	req := executor.Request{Args: []string{"true"}, Policy: policy.Policy{Backend: "process", Net: policy.NetNone}}
	for _, abi := range []int{0, 3} {
		executor.SimulateLandlock(ex, abi)
		_, err := ex.Execute(t.Context(), req)
		var u *policy.UnsupportedError
		if !errors.As(err, &u) || u.Check != policy.CheckLandlockNet || !strings.Contains(u.Reason, "landlock ABI 4 for network rules") {
			t.Errorf("ABI %d, net none: %v; want refused, naming landlock ABI 4", abi, err)
		}
	}
	executor.SimulateLandlock(ex, 0)
	if _, err := ex.Execute(t.Context(), executor.Request{Args: []string{"true"}, Policy: policy.Policy{Backend: "process"}}); !errors.Is(err, executor.ErrUnsupported) {
		t.Errorf("no Landlock, the default net (none): %v; want refused", err)
	}
	// Without Landlock at all the host's filesystem is refused (issue 42:
	// nothing listed without an opt-in) unless best_effort names landlock.
	var u *policy.UnsupportedError
	if _, err := ex.Execute(t.Context(), executor.Request{Args: []string{"true"}, Policy: policy.Policy{Backend: "process", Net: policy.NetHost}}); !errors.As(err, &u) || u.Control != "filesystem isolation" || !strings.Contains(u.Fix, "--best-effort=landlock") {
		t.Errorf("no Landlock, net host: %v; want refused, naming filesystem isolation and --best-effort=landlock", err)
	}
	res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"true"}, Policy: policy.Policy{Backend: "process", Net: policy.NetHost, BestEffort: policy.DegradeLandlock}})
	if err != nil || res.Enforced.Landlock != 0 || !slices.Equal(res.Enforced.NotEnforced, []string{"filesystem isolation"}) {
		t.Errorf("no Landlock, net host, best_effort landlock: %v %+v", err, res)
	}
}
