package executor_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

// The process backend keeps what it promises (issue 42, point 7): each
// attack runs as the program, the verdict is judged from the host, root
// and rootless. The reaper (the spawn helper) is the backend's subreaper.

// processExecutor is an executor whose process backend has its reaper.
func processExecutor(t *testing.T) *executor.Executor {
	t.Helper()
	ex, err := executor.New(executor.Config{WorkDir: testutil.WorldReadableDir(t), SpawnPath: testutil.RequireReaper(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Close() })
	return ex
}

func runProcess(t *testing.T, ex *executor.Executor, script string, mod func(*policy.Policy)) *executor.Result {
	t.Helper()
	// On a kernel without Landlock's TCP rules or scopes (the cgroup v2
	// guest), what these tests are not about is accepted as degraded.
	p := policy.Policy{Backend: "process", Timeout: policy.Duration(time.Minute), Net: processNet(ex), BestEffort: processDegrade(ex)}
	if mod != nil {
		mod(&p)
	}
	res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"sh", "-c", script}, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// capLine is the hex value of a /proc/PID/status capability line.
func capLine(t *testing.T, status, name string) uint64 {
	t.Helper()
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, name+":\t"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return n
		}
	}
	t.Fatalf("no %s in %q", name, status)
	return 0
}

// The program holds no capability in any set; as root its bounding set
// is empty too, and rootless (where dropping it needs CAP_SETPCAP) it is
// the caller's: either way enforced.capabilities says the truth.
func TestProcessBackendBoundingSet(t *testing.T) {
	ex := processExecutor(t)
	res := runProcess(t, ex, "cat /proc/self/status", nil)
	if res.Status != nsjail.StatusOK {
		t.Fatalf("%s: %s", res.Status, res.Stderr)
	}
	for _, set := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb"} {
		if v := capLine(t, res.Stdout, set); v != 0 {
			t.Errorf("%s %016x, want none", set, v)
		}
	}
	own, _ := os.ReadFile("/proc/self/status")
	bnd, caller := capLine(t, res.Stdout, "CapBnd"), capLine(t, string(own), "CapBnd")
	caps := res.Enforced.Capabilities
	switch {
	case os.Getuid() == 0 && bnd != 0:
		t.Fatalf("as root the bounding set is %016x, want it empty", bnd)
	case os.Getuid() != 0 && bnd != caller:
		t.Fatalf("rootless the bounding set is %016x, the caller's %016x", bnd, caller)
	case (bnd == 0) != (caps == "none"):
		t.Fatalf("bounding set %016x, yet enforced.capabilities %q", bnd, caps)
	case bnd != 0 && !strings.Contains(caps, "bounding set not dropped"):
		t.Fatalf("enforced.capabilities %q does not say the bounding set is kept", caps)
	}
	t.Logf("CapBnd %016x, enforced.capabilities %q", bnd, caps)
}

// A key the caller put in its session keyring is not the program's: the
// program has a session keyring of its own. The key readable by its
// possessor only (a private one) is then not listed in the program's
// /proc/keys; a key with the default permissions is not listed either as
// root (the program runs as another uid). Rootless, a key of the
// caller's uid with the default permissions (its owner may view it) is
// listed as it would be for any process of that uid, its payload still
// unreadable: keyctl is denied, and the key no longer possessed.
func TestProcessBackendKeyring(t *testing.T) {
	ex := processExecutor(t)
	// A description no key of the keyring has had: add_key of an existing
	// type and description updates that key instead (its permissions
	// kept), and the guest's root session keyring outlives a binary (one
	// KEYCTL_SETPERM was refused there, 2026-12-02).
	tag := fmt.Sprintf("airlock-probe-%d-%d", os.Getpid(), time.Now().UnixNano())
	private, err := unix.AddKey("user", tag+"-private", []byte("secret"), unix.KEY_SPEC_SESSION_KEYRING)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.KeyctlInt(unix.KEYCTL_REVOKE, private, 0, 0, 0)
	// Possessor: view, read, write, search, link, setattr; nobody else.
	if err := unix.KeyctlSetperm(private, 0x3f000000); err != nil {
		t.Fatal(err)
	}
	open, err := unix.AddKey("user", tag+"-default", []byte("secret"), unix.KEY_SPEC_SESSION_KEYRING)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.KeyctlInt(unix.KEYCTL_REVOKE, open, 0, 0, 0)
	if b, _ := os.ReadFile("/proc/keys"); !strings.Contains(string(b), tag+"-private") {
		t.Fatalf("the test's own /proc/keys does not list its key:\n%s", b)
	}
	res := runProcess(t, ex, "cat /proc/keys", nil)
	if res.Status != nsjail.StatusOK {
		t.Fatalf("%s: %s", res.Status, res.Stderr)
	}
	if strings.Contains(res.Stdout, tag+"-private") {
		t.Fatalf("the program lists the caller's private session key:\n%s", res.Stdout)
	}
	if os.Getuid() == 0 && strings.Contains(res.Stdout, tag) {
		t.Fatalf("as root the program lists the caller's session key:\n%s", res.Stdout)
	}
	t.Logf("the program's /proc/keys:\n%s", res.Stdout)
}

// 200 orphans under --pids 64 are the reaper's, which reaps them: a fork
// after them succeeds, an orphan's parent is the program's reaper (not
// the host's init), and none is left as a zombie on the host.
func TestProcessBackendOrphans(t *testing.T) {
	ex := processExecutor(t)
	// The orphans exec a copy of true with a name of their own, which
	// their zombies keep (comm), to be found on the host.
	name := fmt.Sprintf("orph%d", os.Getpid()%100000)
	script := `cp /bin/true ./` + name + ` || exit 9
(sleep 30 & echo $! > orphan)
i=0; while [ $i -lt 200 ]; do (./` + name + ` &); i=$((i+1)); done
echo orphan_parent $(cut -d' ' -f4 /proc/$(cat orphan)/stat) reaper $PPID
for try in 1 2 3 4 5 6 7 8 9 10; do if sh -c 'echo forked'; then exit 0; fi; sleep 0.2; done; exit 1`
	res := runProcess(t, ex, script, func(p *policy.Policy) {
		p.Pids = 64
		if !testutil.ExpectCgroups() {
			p.BestEffort |= policy.DegradeLimits // rootless on cgroup v1: RLIMIT_NPROC
		}
	})
	t.Logf("%s %q %q", res.Status, res.Stdout, res.Stderr)
	if res.Status != nsjail.StatusOK || !strings.Contains(res.Stdout, "forked\n") {
		t.Fatalf("the fork after 200 orphans failed: %s %q %q", res.Status, res.Stdout, res.Stderr)
	}
	var parent, reaper int
	if _, err := fmt.Sscanf(res.Stdout, "orphan_parent %d reaper %d", &parent, &reaper); err != nil || parent != reaper || parent <= 1 {
		t.Fatalf("an orphan's parent is %d, the program's reaper %d (%v): %q", parent, reaper, err, res.Stdout)
	}
	if z := zombiesNamed(name); len(z) > 0 {
		t.Fatalf("%d zombies of the run left on the host: %v", len(z), z)
	}
}

// zombiesNamed are the host's zombies whose comm is name.
func zombiesNamed(name string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); err == nil && i > 0 && strings.Contains(s[:i], "("+name+")") && strings.HasPrefix(s[i:], ") Z") {
			pid, _ := strconv.Atoi(e.Name())
			out = append(out, pid)
		}
	}
	return out
}

// After a SIGKILL of its supervisor (the CLI), nothing the program
// started lives on: not a daemon (double fork and setsid) that left the
// program's process group, and not after the program tried to kill or
// stop its reaper (Landlock's signal scope: the reaper is outside its
// domain).
func TestProcessBackendSurvivorAfterSupervisorKill(t *testing.T) {
	testutil.RequireReaper(t)
	// The reaper is out of the program's reach by Landlock's signal scope.
	testutil.RequireLandlock(t, processExecutor(t).Host().LandlockABI(), policy.LandlockScope)
	cli := filepath.Join(testutil.BinDir(t), "airlock")
	dir := testutil.WorldReadableDir(t)
	os.Chmod(dir, 0o777)
	pidFile := filepath.Join(dir, "pid")
	marker := strconv.Itoa(900000 + os.Getpid()%99999)
	// The daemon's pid reaches the test only after the program tried to
	// stop its reaper (and before it tries to kill it, which would end
	// the program with it: its parent-death signal).
	script := `sh -c 'setsid sh -c "sleep ` + marker + ` & echo \$! > ` + pidFile + `.tmp" &'
while [ ! -s ` + pidFile + `.tmp ]; do sleep 0.05; done
kill -STOP $PPID; mv ` + pidFile + `.tmp ` + pidFile + `; kill -KILL $PPID
exec sleep 1000`
	cmd := exec.Command(cli, "run", "--backend", "process", "--bind", dir, "--timeout", "2m", "--", "sh", "-c", script)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second // a survivor would hold the pipe open
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var pid int
	if !testutil.WaitFor(30*time.Second, func() bool {
		b, err := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	}) {
		t.Fatalf("the daemon never wrote its pid: %s", stderr.String())
	}
	if !slices.Contains(testutil.HostProcsWith("sleep", marker), pid) {
		t.Fatalf("the daemon %d is not running before the kill (%v): %s", pid, testutil.HostProcsWith("sleep", marker), stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if !testutil.WaitFor(10*time.Second, func() bool { return len(testutil.HostProcsWith("sleep", marker)) == 0 }) {
		left := testutil.HostProcsWith("sleep", marker)
		for _, p := range left {
			syscall.Kill(p, syscall.SIGKILL)
		}
		t.Fatalf("the daemon outlived its supervisor's SIGKILL: %v", left)
	}
}

// Another process of the program's uid keeps its fd table: what its fds
// are (readlink, stat through the link), their fdinfo and its environment
// are denied (Landlock: ptrace access to a process outside the program's
// domain). The numbers alone stay listable: Landlock grants /proc by
// path, and the program's own children's /proc/PID directories do not
// exist when its ruleset is made (docs/security.md).
func TestProcessBackendForeignFDTable(t *testing.T) {
	ex := processExecutor(t)
	testutil.RequireLandlock(t, ex.Host().LandlockABI(), policy.LandlockFS)
	// A host process of the program's uid, with a file of the test's
	// open, and a secret in its environment.
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		uid, gid = 65534, 65534
	}
	held := exec.Command("sleep", "600")
	held.Env = []string{"AIRLOCK_FD_SECRET=s3cr3t"}
	held.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}}
	if os.Getuid() != 0 {
		held.SysProcAttr.Credential = nil
	}
	if err := held.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { held.Process.Kill(); held.Wait() }()
	h := strconv.Itoa(held.Process.Pid)
	script := `h=` + h + `
readlink /proc/$h/fd/0 && echo LEAK readlink
stat -L /proc/$h/fd/0 >/dev/null 2>&1 && echo LEAK stat
cat /proc/$h/fdinfo/0 2>/dev/null && echo LEAK fdinfo
grep -a AIRLOCK_FD_SECRET /proc/$h/environ && echo LEAK environ
ls /proc/$h/fd >/dev/null 2>&1 && echo listed
readlink /proc/self/fd/1 >/dev/null && echo own`
	res := runProcess(t, ex, script, nil)
	if res.Enforced.UID != uid {
		t.Fatalf("the program ran as uid %d, the held process as %d", res.Enforced.UID, uid)
	}
	if strings.Contains(res.Stdout, "LEAK") || !strings.Contains(res.Stdout, "own") {
		t.Fatalf("another process's fd table or environment is the program's: %q %q", res.Stdout, res.Stderr)
	}
	t.Logf("%q", res.Stdout)
}

// The timeout's kill ends every process of the run too: the reaper's end
// signal, not a SIGKILL that would leave the daemon to the host's init.
func TestProcessBackendTimeoutKillsDaemon(t *testing.T) {
	ex := processExecutor(t)
	m := strconv.Itoa(800000 + os.Getpid()%99999)
	res := runProcess(t, ex, `setsid sh -c 'sleep `+m+`' </dev/null >/dev/null 2>&1 & exec sleep `+m, func(p *policy.Policy) {
		p.Timeout = policy.Duration(time.Second)
	})
	if res.Status != nsjail.StatusTimeout || res.Signal != "SIGKILL" {
		t.Fatalf("status %s signal %q, want a timeout by SIGKILL", res.Status, res.Signal)
	}
	if left := testutil.HostProcsWith("sleep", m); len(left) > 0 {
		for _, p := range left {
			syscall.Kill(p, syscall.SIGKILL)
		}
		t.Fatalf("the daemon outlived the timeout: %v", left)
	}
}
